"""--average-last K: the weights of the last K checkpoints, and their mean as the final model, as the paper
does (section 6.1: the last 5 checkpoints for the base models, the last 20 for the big ones)."""
from __future__ import annotations

import copy
from pathlib import Path

from model.training.checkpoint import average_into, save_weights


class Averaging:
    """The weights of the last K checkpoints in `folder` (step-N.safetensors, written atomically, the
    oldest pruned), and their mean at the end of training."""

    def __init__(self, folder: Path, k: int):
        self.folder, self.k = Path(folder), k

    def _files(self) -> dict[int, Path]:
        found = {}
        for p in self.folder.glob("step-*.safetensors"):
            n = p.name[len("step-"):-len(".safetensors")]
            if n.isdigit():
                found[int(n)] = p
        return found

    def steps(self) -> list[int]:
        return sorted(self._files())[-self.k:]

    def forget_after(self, step: int) -> None:
        """Drop the snapshots a killed run wrote after its last checkpoint."""
        for n, p in self._files().items():
            if n > step:
                p.unlink(missing_ok=True)

    def add(self, model, step: int) -> None:
        save_weights(self.folder / f"step-{step}.safetensors", model)
        files = self._files()
        for n in sorted(files)[:-self.k]:
            files[n].unlink(missing_ok=True)

    def average(self, model):
        """A copy of `model` holding the mean of the kept snapshots, and their steps."""
        steps = self.steps()
        files = self._files()
        averaged = copy.deepcopy(model)
        average_into(averaged, [files[n] for n in steps])
        return averaged, steps
