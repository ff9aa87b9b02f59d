#!/usr/bin/env bash
# One prepared GPU check (for a machine with CUDA; never run in CI): training throughput in bf16
# against torch.nn.Transformer, and inspector latency, on the card. Results go to bench/results/
# and, when $OUT is set (the device tool), are copied there too.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
mkdir -p bench/results
python3 -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; print(torch.cuda.get_device_name(0))"
python3 bench/train_throughput.py --device cuda --bf16 --repeats 5 --steps 10
python3 bench/train_throughput.py --device cuda --repeats 5 --steps 10
python3 bench/inspector_latency.py --device cuda --repeats 50
# the why page's measurement on the card: one forward pass of each layer, n up to 16,384
python3 -c "
import json, sys; sys.path.insert(0, '.')
from model.lessons.complexity import time_layers
res = time_layers([16, 64, 256, 1024, 4096, 16384], device='cuda', repeats=5, budget_s=120)
print(json.dumps(res, indent=1)); json.dump(res, open('bench/results/complexity_cuda.json', 'w'), indent=1)"
if [ -n "${OUT:-}" ]; then cp bench/results/*cuda*.json "$OUT"/; fi
