"""The shipped models: they load safely, their cards say how they were made and what the scores mean,
they score above the bar on held-out sentences (new constructions included), and the translate command
line works on arguments and on standard input."""
import json
import random
import subprocess
import sys

import pytest
import torch

from model.training.checkpoint import load_model_dir
from model.data.corpus import grammar_translation, held_out_combinations, parse_sentence, task_pairs
from model.inference.decode import beam_search, greedy_decode_batch
from model.inference.metrics import bleu, exact_match
from tests.streamlit_server import ROOT

EN_KO = ROOT / "assets" / "models" / "en-ko"
LM = ROOT / "assets" / "models" / "lm"

# sentences of the grammar's newer constructions (docs/corpus-grammar.md), none of them in the training split
NEW_CONSTRUCTIONS = [
    "The sky is blue in summer.",                         # predicate adjective
    "English was easy last week.",
    "Do you like coffee?",                                # yes/no questions
    "Is the sky blue?",
    "I bought three red apples.",                         # numbers and counters
    "She drank two cups of hot coffee.",
    "I eat bread in the kitchen every morning.",          # location and time
    "They played soccer on Saturday.",
    "I ate bread and drank milk.",                        # conjunctions
    "I like coffee, but she does not like tea.",
    "My friends were busy on Monday.",                    # plural subject
    "The small cat is hungry.",                           # adjective on the subject
]


@pytest.fixture(scope="module")
def en_ko():
    torch.set_num_threads(1)
    return load_model_dir(EN_KO)


def translate(model_dir, sentences: list[str]) -> list[str]:
    tok, model = model_dir.tokenizer, model_dir.model
    sources = [tok.encode(s) + [tok.eos_id] for s in sentences]
    return [tok.decode(h) for h in greedy_decode_batch(model, sources, bos_id=tok.bos_id, eos_id=tok.eos_id)]


def test_card_and_files():
    for d in (EN_KO, LM):
        for f in ("config.json", "model.safetensors", "tokenizer.model", "meta.json", "CARD.md"):
            assert (d / f).is_file(), d / f
        assert (d / "model.safetensors").stat().st_size < 25_000_000  # small enough to commit
    card = (EN_KO / "CARD.md").read_text(encoding="utf-8")
    assert "python -m model.training.train --task en-ko" in card
    assert "not comparable with the paper's BLEU" in card and "28.4" in card and "character-level" in card


def test_card_scores_are_the_held_out_test_split():
    meta = json.loads((EN_KO / "meta.json").read_text(encoding="utf-8"))
    scores = meta["scores"]
    assert scores["test_sentences"] == len(task_pairs("en-ko", seed=meta["seed"])["test"])
    assert scores["exact_match_beam4"] >= 0.95 and scores["bleu_beam4"] >= 95
    assert meta["train_seconds"] < 30 * 60
    card = (EN_KO / "CARD.md").read_text(encoding="utf-8")
    assert f"- exact_match_beam4: {scores['exact_match_beam4']:.4f}" in card
    assert f"--steps {meta['steps']}" in card and meta["command"] in card


def test_en_ko_scores_on_held_out_sample(en_ko):
    tok, model = en_ko.tokenizer, en_ko.model
    test = task_pairs("en-ko")["test"]
    held = set(held_out_combinations())
    unseen = [p for p in test if parse_sentence(p[0]).combinations & held]
    assert len(unseen) > 100
    sample = random.Random(0).sample(test, 100) + random.Random(1).sample(unseen, 40)
    refs = [t for _, t in sample]
    greedy = translate(en_ko, [s for s, _ in sample])
    sources = [tok.encode(s) + [tok.eos_id] for s, _ in sample[:30]]
    beam = [tok.decode(beam_search(model, s, bos_id=tok.bos_id, eos_id=tok.eos_id, beam_size=4, alpha=0.6,
                                   record=False).tokens) for s in sources]
    assert exact_match(greedy, refs) >= 0.9
    assert bleu(greedy, refs) >= 90
    assert exact_match(beam, refs[:30]) >= 0.9


def test_new_constructions_translate_exactly(en_ko):
    train = {en for en, _ in task_pairs("en-ko")["train"]}
    assert not set(NEW_CONSTRUCTIONS) & train
    refs = [grammar_translation(s) for s in NEW_CONSTRUCTIONS]
    assert None not in refs
    got = translate(en_ko, NEW_CONSTRUCTIONS)
    wrong = [(s, g, r) for s, g, r in zip(NEW_CONSTRUCTIONS, got, refs) if g != r]
    assert len(wrong) <= 1, wrong


def test_translate_cli_argument_and_stdin():
    run = lambda args, inp=None: subprocess.run([sys.executable, "-m", "model.inference.translate", *args], input=inp,
                                                capture_output=True, text=True, cwd=ROOT, timeout=120)
    out = run(["I go to school."])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "나는 학교에 간다."
    out = run(["--greedy"], "We see the sky.\nShe drank cold water yesterday.\n\nThe teacher does not like the new movie.\n")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:4] == ["우리는 하늘을 본다.", "그녀는 어제 차가운 물을 마셨다.", "",
                                          "선생님은 새 영화를 좋아하지 않는다."]
    bad = run(["--model", str(ROOT / "nowhere"), "hi"])
    assert bad.returncode == 2 and "not found" in bad.stderr
