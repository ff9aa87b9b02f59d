"""XLM-RoBERTa (Conneau et al., 2019; config.json model_type "xlm-roberta") as our Transformer: RoBERTa's network
(model/hub/roberta.py, itself BERT's: see those modules for how it differs from the paper) read in 100 languages
through a SentencePiece Unigram tokenizer instead of byte-level BPE.

Weights and heads: exactly RoBERTa's (`XLMRobertaModel`, `XLMRobertaForMaskedLM`, `...ForSequenceClassification`,
`...ForTokenClassification` are RoBERTa's classes under another name), so `convert` renames the classes and calls
roberta.convert.

Tokenizer, in either of the layouts a checkpoint carries:
- `sentencepiece.bpe.model` (the original fairseq layout): SentencePiece cuts the text into pieces and its ids are
  shifted by one, fairseq's order: <s> 0, <pad> 1, </s> 2, <unk> 3 (SentencePiece's own unknown, 0, maps there),
  every piece at its SentencePiece id + 1, and <mask> after the last piece;
- a Unigram `tokenizer.json` (what transformers saves): its pieces and scores, in id order, and its normaliser's
  precompiled character map (NFKC-style), become a SentencePiece model that SentencePiece itself runs: the same
  Unigram segmentation (the most probable sequence of pieces), ids as the file numbers them.
Special tokens typed in the text are kept whole; <mask> takes the spaces before it, as its tokenizer files say
(lstrip). A sentence is <s> A </s>, a pair <s> A </s></s> B </s> (RoBERTa's `pair`)."""
from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Iterable

from model.hub import HubError, roberta

# The family's declaration (model/hub/families.py reads it without importing this module: literals only)
MODEL_TYPES = ("xlm-roberta",)
TITLE = "XLM-RoBERTa"
SIZES = ("num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads")
SIZE_KEYS = {"vocab_size": 1, "hidden_size": 1, "num_hidden_layers": 0, "num_attention_heads": 1,
             "intermediate_size": 1, "max_position_embeddings": 1, "type_vocab_size": 0}
AGREE = {"hidden_size": (r"embeddings\.word_embeddings\.weight", 1),
         "vocab_size": (r"embeddings\.word_embeddings\.weight", 0),
         "max_position_embeddings": (r"embeddings\.position_embeddings\.weight", 0),
         "type_vocab_size": (r"embeddings\.token_type_embeddings\.weight", 0),
         "intermediate_size": (r"encoder\.layer\.0\.intermediate\.dense\.weight", 0)}
LAYERS = {"num_hidden_layers": r"encoder\.layer\.(\d+)\."}
READS = ("sentencepiece.bpe.model", "tokenizer.json")
UNCOUNTED = {r"(?:^|\.)pooler\.dense\.": "unless:classifier.", r"^cls\.seq_relationship\.": None}
POSITION_OFFSET = "pad_token_id"

SPM_FILE, TOKENIZER_JSON = "sentencepiece.bpe.model", "tokenizer.json"
SPECIALS = {"bos": "<s>", "pad": "<pad>", "eos": "</s>", "unk": "<unk>"}  # fairseq's first four ids, in order
MASK = "<mask>"
# XLM-RoBERTa's classes -> RoBERTa's (the same networks)
ARCHITECTURES = {f"XLMRoberta{suffix}": f"Roberta{suffix}"
                 for suffix in ("Model", "ForMaskedLM", "ForSequenceClassification", "ForTokenClassification")}


def convert(hf_config: dict, weights: dict) -> tuple:
    """RoBERTa's conversion, the classes renamed; refusals name XLM-RoBERTa."""
    as_roberta = dict(hf_config, model_type="roberta")
    if isinstance(hf_config.get("architectures"), list):
        as_roberta["architectures"] = [  # any other class too, so that RoBERTa's refusal of it applies
            ARCHITECTURES.get(a, "Roberta" + a[len("XLMRoberta"):] if a.startswith("XLMRoberta") else a)
            if isinstance(a, str) else a for a in hf_config["architectures"]]
    try:
        return roberta.convert(as_roberta, weights)
    except HubError as e:
        text = re.sub(r"(?<![-\w])Roberta(?=Model|For)", "XLMRoberta", str(e))
        raise HubError(re.sub(r"(?<!XLM-)RoBERTa", "XLM-RoBERTa", text)) from None


meta = roberta.meta  # the task convert found, a classifier's labels
build = roberta.build  # a classifier's head as the module task_head


# -----------------------------------------------------------------------------
# tokenizer

class XLMRobertaTokenizer:
    """A SentencePiece Unigram model with XLM-RoBERTa's ids (see the module doc): `offset` 1 for the fairseq
    layout (SentencePiece id + 1, its unknown 0 -> <unk>), 0 for a tokenizer.json's own numbering."""
    kind = "sentencepiece"

    def __init__(self, sp, offset: int, mask_id: int, source: str):
        self.sp, self.offset, self.source = sp, offset, source
        self.bos_id, self.pad_id, self.eos_id, self.unk_id = 0, 1, 2, 3
        self.mask_id = mask_id
        self.roles = {**SPECIALS, "mask": MASK}
        self.special_ids = {0: "<s>", 1: "<pad>", 2: "</s>", 3: "<unk>", mask_id: MASK}
        self._split = re.compile(r"\s*<mask>|<s>|</s>|<pad>|<unk>")  # <mask> swallows the spaces before it (lstrip)

    @property
    def mask_token(self) -> str:
        return MASK

    @property
    def vocab_size(self) -> int:
        return max(self.sp.get_piece_size() + self.offset, self.mask_id + 1)

    @property
    def largest_id(self) -> int:
        return self.vocab_size - 1

    def _ids(self, text: str) -> list[int]:
        if not text:
            return []
        ids = self.sp.encode(text)
        if self.offset:  # fairseq: SentencePiece's unknown (0) is <unk>, every other piece one further on
            return [i + self.offset if i else self.unk_id for i in ids]
        return ids

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        start = 0
        for m in self._split.finditer(text):
            ids += self._ids(text[start:m.start()])
            ids.append({"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}.get(m.group().strip(), self.mask_id))
            start = m.end()
        ids += self._ids(text[start:])
        return ids

    def id_to_piece(self, i: int) -> str:
        i = int(i)
        if i in self.special_ids:
            return self.special_ids[i]
        j = i - self.offset
        return self.sp.id_to_piece(j) if 0 <= j < self.sp.get_piece_size() else f"<unused {i}>"

    def pieces(self, text: str) -> list[str]:
        return [self.id_to_piece(i) for i in self.encode(text)]

    def decode(self, ids: Iterable[int]) -> str:
        skip = (self.pad_id, self.bos_id, self.eos_id)
        text = "".join(self.id_to_piece(i) for i in ids if int(i) not in skip)
        return text.replace("\u2581", " ").strip()

    def is_byte(self, i: int) -> bool:
        return False

    def is_special(self, i: int) -> bool:
        return int(i) in self.special_ids

    pair = roberta.RobertaTokenizer.pair  # <s> A </s></s> B </s>, all segment 0; a typed <pad> refused

    def __repr__(self) -> str:
        return f"XLMRobertaTokenizer(vocab_size={self.vocab_size}, source={self.source})"


def _processor(proto: bytes, where: str):
    import sentencepiece as spm
    try:
        return spm.SentencePieceProcessor(model_proto=proto)
    except Exception as e:  # sentencepiece raises RuntimeError / OSError on bad protos
        raise HubError(f"{where}: not a SentencePiece model ({str(e).strip()[:120] or type(e).__name__})") from None


def _from_spm(path: Path) -> XLMRobertaTokenizer:
    from model.hub.guard import TEXT_LIMIT
    with open(path, "rb") as f:
        data = f.read(TEXT_LIMIT + 1)
    if not data or len(data) > TEXT_LIMIT:
        raise HubError(f"{SPM_FILE}: {'empty' if not data else 'too large'}")
    sp = _processor(data, SPM_FILE)
    return XLMRobertaTokenizer(sp, 1, sp.get_piece_size() + 1, SPM_FILE)


def _from_tokenizer_json(path: Path, rows: int) -> XLMRobertaTokenizer:
    """A Unigram tokenizer.json as the SentencePiece model that runs it (see the module doc)."""
    from sentencepiece import sentencepiece_model_pb2 as pb

    from model.hub.bytebpe import read_json
    d = read_json(path, entries=4 * rows)
    model = d.get("model") if isinstance(d, dict) else None
    if not isinstance(model, dict) or model.get("type") != "Unigram":
        kind = model.get("type") if isinstance(model, dict) else None
        raise HubError(f"{TOKENIZER_JSON}: not a Unigram tokenizer (model type {str(kind)[:40]!r})")
    vocab = model.get("vocab")
    if isinstance(vocab, list) and len(vocab) > rows:
        from model.hub.guard import check_vocabulary
        check_vocabulary(len(vocab) - 1, rows, TOKENIZER_JSON)
    if not (isinstance(vocab, list) and vocab and all(
            isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) and isinstance(v[1], (int, float))
            for v in vocab)):
        raise HubError(f"{TOKENIZER_JSON}: model.vocab is not a list of [piece, score] pairs")
    pieces = [v[0] for v in vocab]
    for n, (role, token) in enumerate(SPECIALS.items()):
        if n >= len(pieces) or pieces[n] != token:
            raise HubError(f"{TOKENIZER_JSON}: id {n} is not {token} ({role}), as XLM-RoBERTa numbers them")
    if MASK not in pieces:
        raise HubError(f"{TOKENIZER_JSON}: the vocabulary has no {MASK}")
    m = pb.ModelProto()
    for n, (piece, score) in enumerate(vocab):
        p = m.pieces.add()
        p.piece, p.score = piece, float(score)
        p.type = (pb.ModelProto.SentencePiece.CONTROL if n in (0, 1, 2) else pb.ModelProto.SentencePiece.UNKNOWN
                  if n == 3 else pb.ModelProto.SentencePiece.USER_DEFINED if piece == MASK
                  else pb.ModelProto.SentencePiece.NORMAL)
    m.trainer_spec.model_type = pb.TrainerSpec.UNIGRAM
    m.trainer_spec.bos_id, m.trainer_spec.pad_id, m.trainer_spec.eos_id, m.trainer_spec.unk_id = 0, 1, 2, 3
    spec = m.normalizer_spec
    spec.add_dummy_prefix = spec.remove_extra_whitespaces = spec.escape_whitespaces = True
    _check_pre_tokenizer(d.get("pre_tokenizer"))
    charsmap = _charsmap(d.get("normalizer"))
    if charsmap:
        spec.name, spec.precompiled_charsmap = "user_defined", charsmap
    else:
        spec.name = "identity"
    return XLMRobertaTokenizer(_processor(m.SerializeToString(), TOKENIZER_JSON), 0, pieces.index(MASK),
                               TOKENIZER_JSON)


def _check_pre_tokenizer(pre) -> None:
    """SentencePiece's own split: words at whitespace, each with "▁" in front (Metaspace, after a
    WhitespaceSplit or alone); any other pre-tokenizer is refused by name."""
    steps = pre.get("pretokenizers") if isinstance(pre, dict) and pre.get("type") == "Sequence" else [pre]
    kinds = [s.get("type") if isinstance(s, dict) else None for s in steps] if isinstance(steps, list) else [None]
    meta = next((s for s in steps if isinstance(s, dict) and s.get("type") == "Metaspace"), None) \
        if isinstance(steps, list) else None
    if kinds not in (["Metaspace"], ["WhitespaceSplit", "Metaspace"]) or meta.get("replacement", "▁") != "▁" \
            or meta.get("prepend_scheme", "always") != "always" or meta.get("add_prefix_space", True) is False:
        raise HubError(f"{TOKENIZER_JSON}: pre-tokenizer {str(kinds)[:60]}; XLM-RoBERTa's is SentencePiece's "
                       f"(Metaspace, a ▁ before every word)")


def _charsmap(normalizer) -> bytes | None:
    """The precompiled character map of a tokenizer.json's normaliser (Precompiled, alone or followed by
    collapsing runs of spaces, which SentencePiece does too); None for no normaliser; anything else refused."""
    if normalizer is None:
        return None
    steps = normalizer.get("normalizers") if isinstance(normalizer, dict) and normalizer.get("type") == "Sequence" \
        else [normalizer]
    out = None
    for step in steps if isinstance(steps, list) else [None]:
        kind = step.get("type") if isinstance(step, dict) else None
        if kind == "Precompiled" and isinstance(step.get("precompiled_charsmap"), str):
            try:
                out = base64.b64decode(step["precompiled_charsmap"], validate=True)
            except ValueError:
                raise HubError(f"{TOKENIZER_JSON}: its precompiled character map is not base64") from None
        elif not (kind == "Replace" and step.get("content") == " "):
            raise HubError(f"{TOKENIZER_JSON}: a normaliser ({str(kind)[:40]!r}) that XLM-RoBERTa does not have")
    return out


def tokenizer(folder: Path, hf_config: dict) -> XLMRobertaTokenizer:
    from model.hub.bytebpe import vocabulary_rows
    folder = Path(folder)
    if (folder / SPM_FILE).is_file():
        return _from_spm(folder / SPM_FILE)
    if (folder / TOKENIZER_JSON).is_file():
        return _from_tokenizer_json(folder / TOKENIZER_JSON, vocabulary_rows(hf_config))
    raise HubError(f"{SPM_FILE}: file not found (an XLM-RoBERTa folder has {SPM_FILE} or {TOKENIZER_JSON})")
