"""Write assets/digits/digits.npz once from scikit-learn's copy of the UCI handwritten digits.

scikit-learn is NOT a dependency of the app: it is needed only to run this script, once, by whoever
refreshes the asset (`pip install scikit-learn; python tools/make_digits.py`). The app and the tests
read the .npz with numpy alone (model/family/digits.py).

The file holds
    images  uint8 (1797, 8, 8), values 0..16 (on-pixels counted in 4×4 blocks of a 32×32 bitmap)
    labels  uint8 (1797,), the digit 0..9
in scikit-learn's order (no shuffling: the split is made, seeded, by model/family/digits.py)."""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "assets" / "digits" / "digits.npz"


def main() -> int:
    from sklearn.datasets import load_digits  # only here: the app never imports scikit-learn

    d = load_digits()
    images = np.asarray(d.images)
    labels = np.asarray(d.target)
    assert images.shape == (1797, 8, 8) and labels.shape == (1797,), (images.shape, labels.shape)
    assert np.array_equal(images, np.round(images)) and images.min() >= 0 and images.max() <= 16
    images = images.astype(np.uint8)
    labels = labels.astype(np.uint8)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, images=images, labels=labels)
    digest = hashlib.sha256(images.tobytes() + labels.tobytes()).hexdigest()
    print(f"wrote {OUT.relative_to(ROOT)} ({OUT.stat().st_size:,} bytes): images {images.shape} "
          f"labels {labels.shape}, per class {np.bincount(labels).tolist()}, sha256(images+labels) {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
