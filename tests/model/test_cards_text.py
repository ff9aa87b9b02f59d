"""The shipped model cards read as the card writer writes them today: the training device as format_parts writes
it ("1 thread", not "1 threads")."""
import re
from pathlib import Path

import pytest

from model.nn.device import format_parts, parse_description

CARDS = sorted((Path(__file__).resolve().parents[2] / "assets" / "models").glob("*/CARD.md"))


@pytest.mark.parametrize("card", CARDS, ids=lambda p: p.parent.name)
def test_the_card_writes_its_device_as_the_writer_does(card):
    line = next(x for x in card.read_text(encoding="utf-8").splitlines() if x.startswith("- Trained for"))
    device = re.search(r" on (.+?) \(torch ", line).group(1)
    assert format_parts(parse_description(device)) == device
