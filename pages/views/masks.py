"""The masks page's model and sentences, shared with the guided tour (pages/views/tour.py) so that both pick the
same model for the same choice and cut a sentence at the same token."""
from __future__ import annotations

import streamlit as st

from app.i18n import Message, UserError, say, t
from app.inputs import piece_label
from app.resources import available_models, demo_model, load_model, shared_tokenizer, weights_stamp
from app.ui import error
from model.hub import is_hf_folder, read_hf_config
from model.training.checkpoint import CheckpointError, load_config

MAX_TOKENS = 20
SEEDED = "seeded"  # the model picker's id for the seeded, untrained demo model


def encoder_decoder(path) -> bool:
    """Whether a model folder holds an encoder-decoder, read from its config alone (no weights loaded): the masks
    page shows the encoder's, the decoder's and the cross attention, which a decoder-only or encoder-only model
    does not have. A folder whose config cannot be read is kept: loading it says what is wrong."""
    try:
        if is_hf_folder(path):
            hf = read_hf_config(path)
            return bool(hf.get("is_encoder_decoder")) or hf.get("model_type") == "marian"
        return load_config(path).architecture == "encoder-decoder"
    except (CheckpointError, OSError):  # the hub's HubError is a CheckpointError
        return True


def encoder_decoder_models() -> dict:
    """{name: folder} of the models the masks page offers besides the seeded one."""
    return {name: path for name, path in available_models().items() if encoder_decoder(path)}


def pick_model(choice: str, trained: dict):
    """(model, tokenizer, description, seeded?, key) for the choice; falls back to the seeded model. The key
    names the weights (the run folder and its version) for the results and figures cached from them."""
    if choice in trained:
        try:
            loaded = load_model(trained[choice])
            if loaded.config.architecture == "encoder-decoder" and loaded.tokenizer is not None:
                return loaded.model, loaded.tokenizer, choice, False, (str(trained[choice]),
                                                                       weights_stamp(trained[choice]))
            st.warning(t("masks.not_encoder_decoder", name=choice))
        except CheckpointError as e:  # a broken checkpoint must not break the page
            error(UserError("masks.errors.cannot_load", detail=str(e)[:300], name=choice))
    tok = shared_tokenizer()
    return demo_model(tok.vocab_size), tok, t("masks.seeded_desc"), True, (SEEDED, tok.vocab_size)


def tokenize(tok, sentence: str, what: Message) -> tuple[list[int], list[str]]:
    """Ids and display labels of one sentence, cut to MAX_TOKENS (with a warning)."""
    sentence = (sentence or "").strip()
    if not sentence:
        raise UserError("masks.errors.empty", what=what)
    ids, pieces = tok.encode(sentence), tok.pieces(sentence)
    if len(ids) > MAX_TOKENS:
        st.warning(t("masks.too_many_tokens", what=say(what), n=len(ids), max=MAX_TOKENS))
        ids, pieces = ids[:MAX_TOKENS], pieces[:MAX_TOKENS]
    return ids, [piece_label(p) for p in pieces]
