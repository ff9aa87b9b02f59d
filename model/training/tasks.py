"""What the training loop trains, behind one interface: a translation / language-model task (or a user's TSV
corpus) with the paper's Transformer, or a member of the Transformer family (model/family), whose task object
does the work. Each gives the loop its model config, the model, the optimiser and schedule, a batch for a
step, the loss of a batch, an evaluation, and how to save and export the model.

    task_for(args)   the task of a run's options (its data loaded); GiveUp when the corpus cannot be used
"""
from __future__ import annotations

import torch

from model.data.train_data import TokenBatches, load_task, make_batch
from model.family import family_task, is_family_task, save_family_dir
from model.messages import Message, UserError
from model.nn.transformer import Transformer
from model.training.checkpoint import save_model_dir
from model.training.faults import GiveUp
from model.training.options import config_problem, model_config, read_config, split_seed
from model.training.schedule import ADAM_BETAS, ADAM_EPS, noam_lambda


def task_for(args) -> Seq2Seq | FamilyMember:
    if is_family_task(args.task):
        return FamilyMember(args)
    max_len = read_config(args.config).max_len if args.config else args.max_len
    try:
        data = load_task(args.task, split_seed(args), args.tsv, max_len)
    except UserError as e:
        raise GiveUp(Message("train.status.corpus", {"problem": e.message}), 2, step=0,
                     total_steps=args.steps) from None
    except OSError as e:
        raise GiveUp(Message("train.status.corpus_unreadable", {"detail": str(e)}), 2, step=0,
                     total_steps=args.steps) from None
    return Seq2Seq(args, data)


def adam(params, lr: float = 1.0) -> torch.optim.Adam:
    """The paper's Adam (beta1 0.9, beta2 0.98, eps 1e-9), with torch's fused kernel where the parameters
    live on the CPU or a CUDA device: one kernel for all parameters instead of a dozen ops each
    (docs/benchmarks.md measures the step both ways); plain Adam elsewhere."""
    params = list(params)
    if params and all(p.device.type in ("cpu", "cuda") and p.is_floating_point() for p in params):
        try:
            return torch.optim.Adam(params, lr=lr, betas=ADAM_BETAS, eps=ADAM_EPS, fused=True)
        except (RuntimeError, TypeError, ValueError):
            pass
    return torch.optim.Adam(params, lr=lr, betas=ADAM_BETAS, eps=ADAM_EPS)


def bounded(ev: dict) -> dict:
    """An evaluation's record with its sample strings cut short (a family task's too): it is written
    into status.json and metrics.jsonl at every evaluation."""
    from model.inference.evaluate import clip
    samples = ev.get("samples")
    if isinstance(samples, list):
        ev = {**ev, "samples": [{k: clip(v) if isinstance(v, str) else v for k, v in s.items()}
                                if isinstance(s, dict) else s for s in samples[:10]]}
    return ev


class Seq2Seq:
    """The translation / language-model tasks (and a user's TSV corpus) for the training loop."""

    def __init__(self, args, data):
        self.args, self.data, self.tok = args, data, data.tokenizer
        self.by_tokens = (TokenBatches(data.train, args.batch_tokens, data.decoder_only)
                          if getattr(args, "batch_tokens", 0) else None)

    def config(self, args):
        cfg = model_config(args, self.tok.vocab_size)
        return cfg, config_problem(cfg, self.tok.vocab_size, self.data.decoder_only)

    def build(self, cfg):
        return Transformer(cfg)

    def optimizer(self, model, args):
        opt = adam(model.parameters())
        return opt, torch.optim.lr_scheduler.LambdaLR(opt, noam_lambda(model.config.d_model, args.warmup,
                                                                         args.lr_factor, total=args.steps,
                                                                         cooldown=args.cooldown))

    def batch(self, step, seed, rank, batch_size, device):
        # Batches depend only on (seed, step, rank): a resumed run sees the same data.
        if self.by_tokens is not None:
            idx = self.by_tokens.indices(seed, step, rank)
        else:
            g = torch.Generator().manual_seed(seed * 1_000_003 + step * 7919 + rank)
            idx = torch.randint(len(self.data.train), (batch_size,), generator=g).tolist()
        tok = self.tok
        return make_batch(self.data.train, idx, tok.pad_id, tok.bos_id, tok.eos_id, self.data.decoder_only, device)

    def loss(self, model, raw, batch):
        src, tin, tout = batch
        pad = self.tok.pad_id
        # The loss comes out of forward() (through DDP's forward, so data-parallel gradients are synchronised),
        # on the CPU a block of rows at a time without the whole logits tensor (Transformer.output_loss, model/nn/fast).
        out = model(src, tin, src_pad_mask=src != pad, labels=tout) if src is not None else model(tin, labels=tout)
        n_tok = int((tout != pad).sum()) + (int((src != pad).sum()) if src is not None else 0)
        return out.loss, n_tok

    def evaluate(self, model, device):
        from model.inference.evaluate import evaluate
        return evaluate(model, self.data, device)

    def save(self, directory, model, meta):
        save_model_dir(directory, model, self.tok, meta)

    def export(self, model, args, dest, seconds, command, averaged=None):
        from model.training.export import export_model
        export_model(model, self.data, args, dest, seconds, command, averaged_steps=averaged)


class FamilyMember:
    """A member of the Transformer family (model/family): the task object does the work."""

    def __init__(self, args):
        self.task = family_task(args.task, args.seed)

    def config(self, args):
        if args.config:
            try:
                return self.task.config_class.from_dict(dict(args.config)), None
            except (TypeError, ValueError) as e:
                return None, Message("train.status.bad_config", {"detail": str(e)[:300]})
        return self.task.default_config(args), None

    def build(self, cfg):
        return self.task.build(cfg)

    def optimizer(self, model, args):
        return self.task.optimizer(model, args)

    def batch(self, step, seed, rank, batch_size, device):
        return self.task.batch(step, seed, rank, batch_size, device)

    def loss(self, model, raw, batch):
        return self.task.loss(model, batch)

    def evaluate(self, model, device):
        raw = model.module if hasattr(model, "module") else model
        was = raw.training
        raw.eval()
        try:
            with torch.no_grad():
                ev = dict(self.task.evaluate(raw, device))
        finally:
            raw.train(was)
        ev.update({std: ev[key] for std, key in self.task.standard_metrics.items() if key in ev})
        return ev

    def save(self, directory, model, meta):
        save_family_dir(directory, self.task, model, meta)

    def export(self, model, args, dest, seconds, command, averaged=None):
        from model.training.export import export_family
        export_family(self.task, model, args, dest, seconds, command, averaged_steps=averaged)
