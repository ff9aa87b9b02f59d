"""The BERT-style member of the family page (model/family/mlm.py, mlm_data.py, pages/family/mlm.py): the
tokenizer with [CLS]/[SEP]/[MASK], BERT's masking, segments, the loss on masked positions only, bidirectional
attention, the learner's errors, the trainer, the shipped model and the page section in both languages."""
import json
import types

import numpy as np
import pytest
from app.i18n import LANGS
import torch

from tests.apptest_util import open_link, section_script, toasts

from model.nn.config import TransformerConfig
from model.data.corpus import ASSETS
from model.family import family_task, load_family_dir, save_family_dir
from model.family.mlm import (MlmTask, encode_with_segments, fill_masks, later_share, masked_logits, score_batches,
                              tokens)
from model.family.mlm_data import (ACTION_KEEP, ACTION_MASK, ACTION_NONE, ACTION_RANDOM, IGNORE, KINDS, SCORE_KINDS,
                                   MlmTokenizer, fixed_batches, join_segments, mask_sequence, shared_tokenizer)
from model.messages import UserError
from model.nn.transformer import Transformer
from tests.apptest_read import attention_views, charts, tables

SHIPPED = ASSETS / "models" / "mlm"
TINY = dict(d_model=32, heads=2, d_ff=64, layers=2, dropout=0.0, max_len=64)


@pytest.fixture(scope="module")
def tok():
    return shared_tokenizer()


@pytest.fixture(scope="module")
def task():
    return MlmTask(0)


@pytest.fixture(scope="module")
def tiny(task):
    torch.manual_seed(0)
    return task.build(task.default_config(types.SimpleNamespace(**TINY))).eval()


def _code(excinfo) -> str:
    return excinfo.value.message.code


# ----------------------------------------------------------------------------- tokenizer

def test_tokenizer_specials_and_vocab(tok):
    assert tok.vocab_size == tok.base.vocab_size + 1 == 2001
    assert (tok.pad_id, tok.cls_id, tok.sep_id, tok.mask_id) == (0, 2, 3, 2000)
    assert [tok.id_to_piece(i) for i in (0, 2, 3, 2000)] == ["[PAD]", "[CLS]", "[SEP]", "[MASK]"]
    assert tok.is_special(0) and tok.is_special(2) and tok.is_special(3)
    assert not tok.is_special(tok.mask_id) and not tok.is_byte(tok.mask_id)


@pytest.mark.parametrize("text", ["I see the sea every day.", "나는 매일 바다를 본다.", "emoji 🙂 and\ttab",
                                  "I see the [MASK] every day.", "[MASK] drank cold water.", "나는 매일 [MASK] 본다."])
def test_tokenizer_round_trip(tok, text):
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    assert tok.pieces(text) == [tok.id_to_piece(i) for i in ids]
    assert ids.count(tok.mask_id) == text.count("[MASK]")
    assert tok.encode(tok.decode(ids)) == ids


def test_typed_mask_takes_the_place_of_one_whole_piece(tok):
    assert tok.pieces("I see the [MASK] every day.") == ["▁I", "▁see", "▁the", "[MASK]", "▁every", "▁day", "."]
    full = tok.encode("I see the sea every day.")
    masked = tok.encode("I see the [mask] every day.")  # any case
    assert len(full) == len(masked) and [a == b for a, b in zip(full, masked)].count(False) == 1
    assert tok.encode("a\x00b") == tok.encode("ab")  # the sentinel cannot be typed


def test_tokenizer_saves_and_loads(tok, tmp_path):
    tok.save(tmp_path)
    again = MlmTokenizer.load(tmp_path)
    assert again.vocab_size == tok.vocab_size and again.encode("I see [MASK].") == tok.encode("I see [MASK].")


# ----------------------------------------------------------------------------- sequences, masking, batches

def test_segments_of_single_sentences_and_pairs(tok):
    a, b = tok.encode("I see the sea every day."), tok.encode("나는 매일 바다를 본다.")
    ids, seg, cut = join_segments(tok, a, None)
    assert ids == [tok.cls_id, *a, tok.sep_id] and seg == [0] * len(ids) and not cut
    ids, seg, cut = join_segments(tok, a, b)
    assert ids == [tok.cls_id, *a, tok.sep_id, *b, tok.sep_id] and not cut
    assert seg == [0] * (len(a) + 2) + [1] * (len(b) + 1)
    ids, seg, cut = join_segments(tok, a * 10, b, max_len=30)
    assert cut and len(ids) == len(seg) == 30 and ids.count(tok.sep_id) == 2 and seg[-1] == 1


def test_batches_depend_only_on_seed_step_and_rank(task):
    a, b = task.batch(5, 0, 0, 16, "cpu"), task.batch(5, 0, 0, 16, "cpu")
    assert torch.equal(a.ids, b.ids) and torch.equal(a.labels, b.labels) and a.kinds == b.kinds
    for other in (task.batch(6, 0, 0, 16, "cpu"), task.batch(5, 0, 1, 16, "cpu"), task.batch(5, 1, 0, 16, "cpu")):
        assert not torch.equal(other.originals, a.originals) or not torch.equal(other.ids, a.ids)


def test_masking_statistics_and_specials_never_masked(task, tok):
    chosen = content = 0
    actions = {ACTION_MASK: 0, ACTION_RANDOM: 0, ACTION_KEEP: 0}
    kinds = {k: 0 for k in KINDS}
    for step in range(30):
        b = task.batch(step, 0, 0, 64, "cpu")
        special = (b.originals == tok.pad_id) | (b.originals == tok.cls_id) | (b.originals == tok.sep_id)
        assert (b.labels[special] == IGNORE).all() and (b.actions[special] == ACTION_NONE).all()
        assert torch.equal(b.ids[special], b.originals[special])  # [CLS], [SEP], padding stay as they are
        assert torch.equal(b.pad_mask, b.originals != tok.pad_id)
        sel = b.labels != IGNORE
        assert torch.equal(b.labels[sel], b.originals[sel])  # the label is the original token
        assert torch.equal(b.ids[~sel], b.originals[~sel])  # nothing else changes
        assert (b.ids[b.actions == ACTION_MASK] == tok.mask_id).all()
        assert torch.equal(b.ids[b.actions == ACTION_KEEP], b.originals[b.actions == ACTION_KEEP])
        randoms = b.ids[b.actions == ACTION_RANDOM]
        assert ((randoms >= 4) & (randoms < tok.mask_id)).all()
        assert (sel.sum(1) >= 1).all()  # every sequence predicts something
        chosen += int(sel.sum())
        content += int((~special).sum())
        for a in actions:
            actions[a] += int((b.actions == a).sum())
        assert len(set(b.kinds)) == 1  # one kind a step (less padding)
        kinds[b.kinds[0]] += 1
    assert 0.14 < chosen / content < 0.17  # 15% (rounded, at least one per sentence)
    assert sum(actions.values()) == chosen
    assert actions[ACTION_MASK] / chosen == pytest.approx(0.8, abs=0.03)
    assert actions[ACTION_RANDOM] / chosen == pytest.approx(0.1, abs=0.02)
    assert actions[ACTION_KEEP] / chosen == pytest.approx(0.1, abs=0.02)
    assert all(n >= 3 for n in kinds.values()) and kinds["pair"] > kinds["en"]  # pairs: half of the steps


@pytest.mark.parametrize("kind", KINDS)
def test_segments_of_each_kind(task, tok, kind):
    b = next(b for b in (task.batch(s, 0, 0, 32, "cpu") for s in range(100)) if b.kinds[0] == kind)
    for row, kind in enumerate(b.kinds):
        seq, seg = b.originals[row].tolist(), b.segments[row].tolist()
        seps = [p for p, i in enumerate(seq) if i == tok.sep_id]
        n = int(b.pad_mask[row].sum())
        if kind == "pair":
            assert len(seps) == 2 and seg[:seps[0] + 1] == [0] * (seps[0] + 1)
            assert seg[seps[0] + 1:n] == [1] * (n - seps[0] - 1)
        else:
            assert len(seps) == 1 and seg[:n] == [0] * n
        assert seg[n:] == [0] * (len(seq) - n)  # padding: segment 0


def test_scoring_masks_the_same_tokens_alone_and_beside_the_translation(tok, tiny):
    en, ko = tok.encode("I see the sea every day."), tok.encode("나는 매일 바다를 본다.")
    batches = fixed_batches(tok, [(en, ko)] * 3, seed=0, max_len=64)
    again = fixed_batches(tok, [(en, ko)] * 3, seed=0, max_len=64)
    assert all(torch.equal(a.ids, b.ids) and torch.equal(a.labels, b.labels) for a, b in zip(batches, again))
    rows = {}
    for b in batches:
        for r, kind in enumerate(b.kinds):
            rows.setdefault(kind, []).append((b.ids[r], b.labels[r], b.segments[r]))
    assert set(rows) == set(SCORE_KINDS) and all(len(v) == 3 for v in rows.values())
    for single, paired, offset in (("en", "en_with_ko", 0), ("ko", "ko_with_en", len(en) + 1)):
        for (ids, labels, _), (p_ids, p_labels, seg) in zip(rows[single], rows[paired]):
            hidden = [int(x) for x in labels[labels != IGNORE]]
            assert hidden == [int(x) for x in p_labels[p_labels != IGNORE]]  # the same tokens are hidden
            assert (ids == tok.mask_id).sum() == (p_ids == tok.mask_id).sum() == len(hidden)  # all as [MASK]
            where = torch.nonzero(labels != IGNORE)[:, 0] + offset
            assert torch.equal(where, torch.nonzero(p_labels != IGNORE)[:, 0])
            other = seg == (1 if single == "en" else 0)
            assert not (p_ids[other] == tok.mask_id).any()  # the translation is whole
    scores = score_batches(tiny, batches, "cpu")
    assert {f"accuracy_{k}" for k in SCORE_KINDS} <= set(scores) and 0 <= scores["accuracy"] <= scores["top5_accuracy"] <= 1


def test_mask_sequence_is_seeded(tok):
    ids = [tok.cls_id, *range(10, 50), tok.sep_id]
    a = mask_sequence(ids, tok, np.random.default_rng(3))
    assert a == mask_sequence(ids, tok, np.random.default_rng(3))
    assert sum(x != IGNORE for x in a[1]) == 6  # round(15% of 40)
    assert mask_sequence([tok.cls_id, tok.sep_id], tok, np.random.default_rng(0))[1] == [IGNORE, IGNORE]


def test_loss_counts_masked_positions_only(task, tiny):
    b = task.batch(1, 0, 0, 8, "cpu")
    loss, n = task.loss(tiny, b)
    assert n == b.n_predicted > 0
    with torch.no_grad():
        full = tiny.project(encode_with_segments(tiny, b.ids, b.segments, b.pad_mask))  # (B, L, V)
        want = torch.nn.functional.cross_entropy(full.reshape(-1, full.size(-1)), b.labels.reshape(-1),
                                                 ignore_index=IGNORE)
    assert float(loss.detach()) == pytest.approx(float(want), rel=1e-5)
    logits, labels = masked_logits(tiny, b)  # the output layer runs on the predicted positions only
    assert logits.shape == (n, tiny.config.vocab_size) and torch.equal(labels, b.labels[b.labels != IGNORE])


def test_segments_reach_the_embedding(tiny, tok):
    ids = torch.tensor([[tok.cls_id, 417, 903, tok.sep_id]])
    zero, one = torch.zeros_like(ids), torch.ones_like(ids)
    with torch.no_grad():
        a = encode_with_segments(tiny, ids, zero)
        b = encode_with_segments(tiny, ids, one)
        plain = tiny.encode(ids)  # Transformer.encode: all segment 0
    assert not torch.allclose(a, b) and torch.allclose(a, plain, atol=1e-6)


# ----------------------------------------------------------------------------- fill in [MASK]

def test_fill_masks_attention_is_bidirectional(tiny, tok):
    r = fill_masks(tiny, tok, "I see the [MASK] every day.", "나는 매일 바다를 본다.")
    T = len(r.ids)
    assert r.attention.shape == (2, 2, T, T) and len(r.pieces) == len(r.segments) == T
    assert np.allclose(r.attention.sum(-1), 1.0, atol=1e-5)
    upper = np.triu(np.ones((T, T), dtype=bool), k=1)
    assert (r.attention[..., upper] > 0).all()  # no causal structure: every query sees later keys
    assert (later_share(r.attention) > 0.05).all()
    assert [p.position for p in r.predictions] == [4] and r.predictions[0].hidden is None
    probs = [p for _, p in r.predictions[0].top]
    assert len(probs) == 5 and probs == sorted(probs, reverse=True)
    assert r.filled_ids()[4] == r.predictions[0].top_ids[0] and r.filled_ids()[:4] == r.ids[:4]


def test_clicked_positions_are_hidden_and_scored(tiny, tok):
    r = fill_masks(tiny, tok, "I see the sea every day.", None, mask_positions=[4, 0, 8, 99])
    assert [p.position for p in r.predictions] == [4]  # [CLS], [SEP] and positions past the end are ignored
    p = r.predictions[0]
    assert r.ids[4] == tok.mask_id and p.hidden == "▁sea" and 1 <= p.hidden_rank <= tok.vocab_size
    assert 0 <= p.hidden_prob <= 1


def test_later_share_of_a_causal_map_is_zero():
    w = np.tril(np.ones((4, 4)))
    w = (w / w.sum(-1, keepdims=True))[None, None]
    assert later_share(w).item() == 0.0
    assert later_share(np.full((1, 1, 2, 2), 0.5)).item() == pytest.approx(0.25)


def test_learner_errors(tiny, tok):
    with pytest.raises(UserError) as e:
        fill_masks(tiny, tok, "   ")
    assert _code(e) == "family_mlm.errors.empty"
    with pytest.raises(UserError) as e:
        fill_masks(tiny, tok, "I see the sea.", "나는 바다를 본다.")
    assert _code(e) == "family_mlm.errors.nothing_masked"
    with pytest.raises(UserError) as e:
        fill_masks(tiny, tok, "[MASK] [MASK]")
    assert _code(e) == "family_mlm.errors.all_masked"
    with pytest.raises(UserError) as e:
        fill_masks(tiny, tok, "I see", None, mask_positions=[1, 2])
    assert _code(e) == "family_mlm.errors.all_masked"
    long = fill_masks(tiny, tok, "I see the [MASK]. " + "I see the sea. " * 40)
    assert long.cut and len(long.ids) == tiny.config.max_len and long.ids[-1] == tok.sep_id
    assert not tokens(tok, "I see the sea.", "  ").cut and tokens(tok, "I see the sea.", "  ").segments.count(1) == 0


# ----------------------------------------------------------------------------- trainer, files, shipped model

def test_config_is_bert_like(task):
    cfg = task.default_config(types.SimpleNamespace(d_model=None, heads=None, d_ff=None, layers=None,
                                                    dropout=None, max_len=None))
    assert cfg.architecture == "encoder-only" and cfg.segment_vocab == 2 and cfg.vocab_size == 2001
    assert cfg.activation == "gelu" and cfg.mlm_transform and cfg.output_bias and cfg.embed_norm
    assert TransformerConfig.from_dict(cfg.to_dict()) == cfg
    assert isinstance(task.build(cfg), Transformer)
    with pytest.raises(ValueError):
        task.build(cfg.replace(architecture="decoder-only"))


def test_family_dir_round_trip(task, tiny, tmp_path):
    save_family_dir(tmp_path / "m", task, tiny, {"steps": 0})
    loaded = load_family_dir(tmp_path / "m", expect="mlm")
    assert isinstance(loaded.extra, MlmTokenizer) and (tmp_path / "m" / "tokenizer.model").is_file()
    assert json.loads((tmp_path / "m" / "config.json").read_text())["family"] == "mlm"
    for a, b in zip(loaded.model.state_dict().values(), tiny.state_dict().values()):
        assert torch.equal(a, b)


def test_trainer_smoke(tmp_path):
    from model.training.train import main
    out = tmp_path / "run"
    rc = main(["--task", "mlm", "--steps", "20", "--out", str(out), "--threads", "1", "--batch-size", "8",
               "--eval-every", "10", "--log-every", "5", "--ckpt-every", "10", "--d-model", "32", "--heads", "2",
               "--d-ff", "64", "--layers", "1"])
    assert rc == 0
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    evals = [r for r in records if r.get("kind") == "eval"]
    assert evals and {"valid_loss", "valid_accuracy", "valid_perplexity"} <= set(evals[-1])
    loaded = load_family_dir(out / "model", expect="mlm")
    assert loaded.config.n_encoder_layers == 1 and loaded.config.d_model == 32
    r = fill_masks(loaded.model, loaded.extra, "I see the [MASK] every day.")
    assert r.attention.shape[:2] == (1, 2)


@pytest.mark.skipif(not (SHIPPED / "config.json").is_file(), reason="no shipped mlm model")
def test_shipped_model_matches_its_card():
    loaded = load_family_dir(SHIPPED, expect="mlm")
    card = loaded.meta["scores"]
    scores = family_task("mlm", loaded.meta.get("seed", 0)).score_test(loaded.model, "cpu")
    assert scores["test_accuracy"] >= card["test_accuracy"] - 0.02
    assert scores["test_top5_accuracy"] >= card["test_top5_accuracy"] - 0.02
    assert scores["test_accuracy"] > 0.5  # it learned to fill masks
    assert loaded.meta["train_seconds"] < 15 * 60
    assert card["test_accuracy_ko_with_en"] > card["test_accuracy_ko"]  # the translation beside it helps
    assert card["test_accuracy_en_with_ko"] >= card["test_accuracy_en"]

    def coffee(pair):
        r = fill_masks(loaded.model, loaded.extra, "I drank hot [MASK] in the park today.", pair)
        return dict(r.predictions[0].top).get("▁coffee", 0.0)
    assert coffee("나는 오늘 공원에서 뜨거운 커피를 마셨다.") > 2 * coffee(None)  # the page's default example


# ----------------------------------------------------------------------------- the section

SCRIPT = section_script("""
from pages.family.mlm import render
render()
""")


@pytest.fixture
def model_in_runs(monkeypatch, tmp_path, task, tiny):
    """The shipped model when there is one, else an untrained one in a run folder."""
    if not (SHIPPED / "config.json").is_file():
        save_family_dir(tmp_path / "runs" / "x" / "model", task, tiny, {"steps": 0})
        monkeypatch.setenv("ATLAS_RUNS_DIR", str(tmp_path / "runs"))


def _clean(at):
    assert not at.exception, [e.value for e in at.exception]


@pytest.mark.parametrize("lang", list(LANGS))
def test_section(lang, model_in_runs):
    from streamlit.testing.v1 import AppTest

    from app.i18n import catalogue, content
    words, prose = catalogue(lang), content(lang)
    at = AppTest.from_string(SCRIPT.format(lang=lang), default_timeout=120)
    at.run()
    _clean(at)
    assert at.header[0].value == words["family_mlm.header"]
    assert at.text_input(key="fam_mlm_text").value == prose["family_mlm.default_text"]
    assert at.text_input(key="fam_mlm_pair").value == prose["family_mlm.default_pair"]
    assert len(charts(at)) == 1 and len(attention_views(at)) == 2  # predictions; the mlm's and the lm's maps
    mlm_later, lm_later = (set(shown.iloc[:, 1:].to_numpy().ravel()) for shown in tables(at)[-2:])
    assert lm_later == {"0.0%"} and "0.0%" not in mlm_later  # the causal triangle vs the full square
    assert len(tables(at)[0]) == 1  # one typed [MASK]
    # a typed [MASK] in an English sentence alone
    at.text_input(key="fam_mlm_pair").set_value("").run()
    at.text_input(key="fam_mlm_text").set_value("She [MASK] to school [MASK].").run()
    _clean(at)
    assert len(tables(at)[0]) == 2
    # clicked masks on a pair without typed masks
    at.text_input(key="fam_mlm_text").set_value("I see the sea every day.").run()
    _clean(at)
    assert words["family_mlm.errors.nothing_masked"] in [i.value for i in at.info]
    at.text_input(key="fam_mlm_pair").set_value("나는 매일 바다를 본다.").run()
    pills = at.get("button_group")[0]
    assert pills.key == "fam_mlm_masked" and len(pills.options) == 7 + 5
    pills.set_value([4]).run()
    _clean(at)
    assert len(tables(at)[0]) == 1 and len(attention_views(at)) == 2
    # a new text clears the clicked masks; every token masked (nothing left to click); empty text
    at.text_input(key="fam_mlm_text").set_value("She [MASK] to school.").run()
    _clean(at)
    assert at.get("button_group")[0].value == [] and len(tables(at)[0]) == 1
    at.text_input(key="fam_mlm_text").set_value("[MASK] [MASK]").run()
    at.text_input(key="fam_mlm_pair").set_value("").run()
    _clean(at)
    assert not at.get("button_group")
    assert any(words["family_mlm.errors.all_masked"].split("{")[0] in e.value for e in at.error)
    at.text_input(key="fam_mlm_text").set_value("").run()
    _clean(at)
    assert words["family_mlm.errors.empty"] in [e.value for e in at.error]
    at.text_input(key="fam_mlm_text").set_value("<s> *bold* `code` 🙂 [MASK] 나는").run()
    _clean(at)


@pytest.mark.parametrize("lang", list(LANGS))
def test_section_in_the_app_from_a_link(lang, model_in_runs):
    at = open_link("family.py", {"member": "mlm", "mlm_text": "I see the sea every day.", "mlm_pair": "",
                                 "mlm_masked": "4", "mlm_layer": "1", "mlm_head": "2"}, lang=lang)
    _clean(at)
    assert at.session_state["fam_mlm_masked"] == [4] and at.session_state["fam_mlm_head"] == 1
    table = tables(at)[0]
    assert list(table.iloc[:, 2]) == ["▁sea"]  # the hidden token
    assert at.query_params.get("mlm_masked") in ("4", ["4"])
    bad = open_link("family.py", {"member": "mlm", "mlm_masked": "x,99", "mlm_layer": "9"}, lang=lang)
    _clean(bad)
    assert bad.session_state["fam_mlm_masked"] == [] and len(toasts(bad)) >= 1
