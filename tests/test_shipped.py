"""The shipped models: they load safely, score above the bar on held-out sentences, and the
translate command line works on arguments and on standard input."""
import random
import subprocess
import sys

import pytest
import torch

from model.checkpoint import load_model_dir
from model.corpus import held_out_combinations, task_pairs
from model.decode import beam_search, greedy_decode_batch
from model.metrics import bleu, exact_match
from tests.streamlit_server import ROOT

EN_KO = ROOT / "assets" / "models" / "en-ko"
LM = ROOT / "assets" / "models" / "lm"


@pytest.fixture(scope="module")
def en_ko():
    torch.set_num_threads(1)
    return load_model_dir(EN_KO)


def test_card_and_files():
    for d in (EN_KO, LM):
        for f in ("config.json", "model.safetensors", "tokenizer.model", "meta.json", "CARD.md"):
            assert (d / f).is_file(), d / f
    assert "python -m model.train" in (EN_KO / "CARD.md").read_text()


def test_en_ko_scores_on_held_out_sample(en_ko):
    tok, model = en_ko.tokenizer, en_ko.model
    test = task_pairs("en-ko")["test"]
    held = {(s.lower(), v) for s, v in held_out_combinations()}
    unseen = [p for p in test if any(p[0].lower().startswith(s + " ") for s, _ in held)]
    assert len(unseen) > 50
    sample = random.Random(0).sample(test, 120) + random.Random(1).sample(unseen, 40)
    sources = [tok.encode(s) + [tok.eos_id] for s, _ in sample]
    refs = [t for _, t in sample]
    greedy = [tok.decode(h) for h in greedy_decode_batch(model, sources, bos_id=tok.bos_id, eos_id=tok.eos_id)]
    beam = [tok.decode(beam_search(model, s, bos_id=tok.bos_id, eos_id=tok.eos_id, beam_size=4, alpha=0.6,
                                   record=False).tokens) for s in sources[:60]]
    assert exact_match(greedy, refs) >= 0.95
    assert bleu(greedy, refs) >= 90
    assert exact_match(beam, refs[:60]) >= 0.95
    assert bleu(beam, refs[:60]) >= 90


def test_translate_cli_argument_and_stdin():
    run = lambda args, inp=None: subprocess.run([sys.executable, "-m", "model.translate", *args], input=inp,
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
