"""Text helpers for the attention inspector (no st.* calls, no computation): token labels, input
cleaning, the words a model never saw, the model card's facts and the rows of its tables, all with
translated labels."""
from __future__ import annotations

import secrets

from app.charts.heatmaps import kv_groups
from app.format import code_span, escape_md, fixed, percent
from app.i18n import catalogue, lang, say, t
from app.resources import device_text
from model.training.card import PAPER_BLEU_EN_DE, CardFacts
from model.data.vocabulary import case_variant, unknown_words
from model.inference.metrics import rounded

MAX_CHARS = 2000
MAX_SEED = 2**31 - 1
STATS = ("entropy", "entropy_norm", "mean_distance", "diagonal", "previous", "first", "last", "max_weight")
ENCODER_TASKS = ("mlm", "classify", "tag", "features")  # what a BERT-family encoder reads as [CLS] A [SEP] (B [SEP])
MAX_CLASSES = 10  # bars of a sequence classifier's labels
PATTERN_HEADS = 8  # heads named per pattern in its row (the strongest first)
MAX_CELL_TEXT = 24  # tokens up to which a token-by-token matrix writes its numbers in the cells


def label(piece: str) -> str:
    """A token as shown to the learner: control characters made visible, an empty piece as ∅ (figures
    escape their labels themselves)."""
    shown = piece.replace("\n", "\\n").replace("\t", "\\t")
    return shown or "∅"


def labels(pieces: list[str]) -> list[str]:
    return [label(p) for p in pieces]


def clean_input(text: str, max_chars: int = MAX_CHARS) -> tuple[str, bool]:
    """Strip surrounding whitespace and cut to max_chars; returns (text, was_cut)."""
    text = (text or "").strip()
    return (text[:max_chars], True) if len(text) > max_chars else (text, False)


def token_table(ids: list[int], pieces: list[str], tokenizer, seen: frozenset[int] | None) -> list[dict]:
    """One row per piece: position, piece, id, byte fallback, seen in training (None for special
    tokens, or when the training data is unknown)."""
    specials = (tokenizer.pad_id, tokenizer.bos_id, tokenizer.eos_id, tokenizer.unk_id)
    col = {k: t(f"inspector.table.{k}") for k in ("piece", "id", "byte", "seen")}
    return [{"#": i, col["piece"]: piece, col["id"]: tid, col["byte"]: bool(tokenizer.is_byte(tid)),
             col["seen"]: (tid in seen) if (seen and tid not in specials) else None}
            for i, (tid, piece) in enumerate(zip(ids, pieces))]


def known_label(key: str, fallback: str) -> str:
    """t(key) when the catalogue has it, else `fallback` (a group or kind added to the data before its label)."""
    return t(key) if key in catalogue(lang()) else fallback


def code(text: str) -> str:
    """Text as a Markdown code span (a backtick inside cannot close it, a blank line cannot end it)."""
    return code_span(text)


def unknown_list(unknown: list[str], known: frozenset[str]) -> str:
    """The words a model never saw, for a message: `you` (it knows `You`), `🐈`."""
    out = []
    for word in unknown:
        variant = case_variant(word, known)
        out.append(t("inspector.unknown_case", word=code(word), known=code(variant)) if variant else code(word))
    return ", ".join(out)


def load_error_key(message: str) -> str:
    """The headline for a model that cannot be loaded, by its reason (model.hub's messages): an architecture or
    option we do not run, too little memory, or (anything else) files that cannot be read as a model."""
    low = message.lower()
    if "unsupported architecture" in low or "not supported" in low:
        return "inspector.errors.unsupported"
    if "of memory to load" in low:
        return "inspector.errors.too_big"
    return "inspector.errors.cannot_load"


def folds_case(tok, known: frozenset[str]) -> bool:
    """Whether the model reads a word the same in any letter case: its tokenizer lower-cases (an uncased BERT),
    or its vocabulary has no capital letters at all."""
    if getattr(tok, "lowercase", False):
        return True
    return bool(known) and not any(c.isupper() for word in known for c in word)


def unknown_in(text: str, known: frozenset[str], tok) -> list[str]:
    """The words of `text` the model never saw, looked up as its tokenizer reads them (lower-cased where it
    lower-cases)."""
    missing = unknown_words(text, known)
    if not folds_case(tok, known):
        return missing
    lowered = {w.lower() for w in known}
    return [w for w in missing if w.lower() not in lowered]


def fresh_seed(current: int | None) -> int:
    """A new sampling seed for the "new seed" button: random, never the current one."""
    while True:
        seed = secrets.randbelow(1_000_000)
        if seed != current:
            return seed


def append_word(text: str, word: str, known: frozenset[str] | None = None) -> str:
    """The sentence box after clicking a word: a space before it (none before a punctuation mark), a capital
    letter when it starts a sentence and the model knows the capitalised word (`known`: the words it saw; None:
    capitalise), so the palette never inserts a word the model then calls unknown ("Bake" for "bake")."""
    text = (text or "").rstrip()
    if not word:
        return text
    if not word[0].isalnum():
        return text + word
    first = word.split(" ", 1)[0]
    if (not text or text[-1] in ".!?") and (known is None or first[:1].upper() + first[1:] in known):
        word = word[:1].upper() + word[1:]
    return f"{text} {word}" if text else word


def example_lines(groups: list[tuple[str, list[str]]]) -> str:
    """Markdown: one line per kind of sentence, its label, then its examples as code."""
    return "\n".join(f"- **{known_label(f'inspector.example_kind.{kind}', kind)}**: "
                      + " · ".join(code(s) for s in sentences) for kind, sentences in groups)


# ----------------------------------------------------------------------------- the model card

def layers_text(facts: CardFacts) -> str:
    enc, dec = facts.n_encoder_layers, facts.n_decoder_layers
    if enc and dec:
        return t("inspector.card.layers_enc_dec", enc=enc, dec=dec)
    return t("inspector.card.layers_dec", dec=dec) if dec else t("inspector.card.layers_enc", enc=enc)


def task_text(task: str | None) -> str:
    if task in ("classify", "tag"):  # a pretrained classifier's task: no training page trains one
        return t(f"inspector.task.{task}")
    return known_label(f"train.task.{task}", task) if task else t("inspector.card.unknown")


def arch_text(facts: CardFacts) -> str:
    return known_label(f"inspector.arch.{facts.architecture}", facts.architecture)


def score_text(facts: CardFacts) -> str | None:
    """The headline test score, saying what it is: character BLEU on the synthetic test split (not
    the paper's BLEU), or a language model's perplexity; None when the model has no test scores."""
    s = facts.scores
    if "bleu_beam4" in s and "exact_match_beam4" in s:
        key = "inspector.card.score_translation" if facts.character_bleu else "inspector.card.score_translation_plain"
        return t(key, exact=s["exact_match_beam4"], bleu=s["bleu_beam4"], paper=PAPER_BLEU_EN_DE)
    if "test_perplexity" in s and "test_next_token_accuracy" in s:
        return t("inspector.card.score_lm", ppl=s["test_perplexity"], acc=s["test_next_token_accuracy"])
    return None


def score_note(facts: CardFacts) -> str | None:
    """What the Korean translation scores measure, under the card's table (None without them)."""
    return t("inspector.card.score_note", paper=PAPER_BLEU_EN_DE) if facts.character_bleu else None


def conversion_lines(meta: dict) -> list[str]:
    """What loading a pretrained checkpoint converted, a sentence per stored type (meta["converted"]:
    {dtype: tensors}); nothing for a checkpoint read as stored."""
    return [t("inspector.converted", n=n, dtype=code_span(dtype)) for dtype, n in (meta.get("converted") or {}).items()]


def summary(facts: CardFacts) -> list[str]:
    """The short facts beside the model's name."""
    out = [arch_text(facts), f"d_model={facts.d_model}", f"h={facts.n_heads}", layers_text(facts),
           t("inspector.card.parameters", n=facts.parameters)]
    if facts.task:
        out.append(t("inspector.card.task", task=task_text(facts.task)))
    score = score_text(facts)
    return out + ([score] if score else [])


def _score_value(name: str, value: float) -> str:
    if name.startswith("exact_match") or name.endswith("accuracy"):
        return percent(value)
    if name.startswith("bleu"):
        return fixed(value, 1)
    if name == "test_sentences":
        return f"{value:,.0f}"
    return fixed(value, 3)


def card_rows(facts: CardFacts) -> list[dict]:
    """The model card's key facts as a two-column table in the current language."""
    fact, value = t("inspector.card.col_fact"), t("inspector.card.col_value")
    unknown = t("inspector.card.unknown")
    norm = t(f"train.norm.{'pre' if facts.norm_first else 'post'}")
    rows = [("task", task_text(facts.task)),
            ("architecture", t("inspector.card.arch_value", arch=arch_text(facts), norm=norm,
                               positional=known_label(f"train.positional.{facts.positional}", facts.positional))),
            ("size", t("inspector.card.size_value", d_model=facts.d_model, n_heads=facts.n_heads, d_ff=facts.d_ff,
                       layer_text=layers_text(facts), vocab=facts.vocab_size, params=facts.parameters))]
    r = facts.recipe
    rows.append(("recipe", t("inspector.card.recipe_value", b1=r.betas[0], b2=r.betas[1], eps=r.eps, warmup=r.warmup,
                             factor=r.lr_factor, ls=facts.label_smoothing, dropout=facts.dropout,
                             batch=r.batch_size, seed=r.seed) if r else unknown))
    if facts.steps is None:
        training = unknown
    elif facts.train_seconds is None:
        training = t("inspector.card.training_steps", steps=facts.steps)
    else:
        training = t("inspector.card.training_value", steps=facts.steps, minutes=facts.train_seconds / 60)
    rows += [("training", training), ("device", device_text(facts.device) or unknown)]
    if facts.origin:  # a pretrained model: where it came from, its licence, how it differs from the paper
        rows = [r for r in rows if r[0] not in ("recipe", "training", "device")]
        rows += [("origin", facts.origin), ("licence", facts.licence or unknown),
                 ("differences", t("inspector.card.differences_below", n=len(facts.difference_words))
                  if facts.difference_words else t("inspector.card.none"))]
    table = [{fact: t(f"inspector.card.row.{name}"), value: text} for name, text in rows]
    for name, v in facts.scores.items():
        plain = name.startswith("bleu_") and not name.startswith("bleu_words") and not facts.character_bleu
        key = f"inspector.score.{'bleu_plain_' + name[5:] if plain else name}"
        if key in catalogue(lang()):
            table.append({fact: t(key), value: _score_value(name, v)})
    return table


def difference_lines(facts: CardFacts) -> str:
    """A pretrained model's differences from the paper as a Markdown list, one sentence each in the current
    language (model.nn.differences); "" for the paper's Transformer or a model trained here. A list, not the card
    table's cell: a table cell does not wrap, and a 2024 decoder has seven differences or more."""
    if not facts.origin:
        return ""
    return "\n".join(f"- {escape_md(say(m))}" for m in facts.difference_words)


def kv_labels(n_heads: int, kv_heads: int) -> list[str] | None:
    """With grouped-query attention, the layer × head grid's label over each key/value head's query heads
    (1-based, as the grid numbers them); None when every query head has its own key and value (the paper)."""
    if kv_heads >= n_heads:
        return None
    return [t("inspector.kv_group", first=first + 1, last=last + 1, kv=kv + 1)
            for first, last, kv in kv_groups(n_heads, kv_heads)]


# ----------------------------------------------------------------------------- a language model, position by position

def position_rows(ids: list[int], cands, piece) -> list[dict]:
    """model.lessons.probe.lm_position_candidates over `ids` as table rows; piece(id) gives a token's text."""
    col = {k: t(f"inspector.pos_table.{k}") for k in ("position", "token", "next", "probability", "rank", "first")}
    rows = []
    for c in cands:
        first, first_p = c.top[0]
        rows.append({col["position"]: c.position + 1, col["token"]: label(piece(ids[c.position])),
                     col["next"]: label(piece(c.actual)) if c.actual is not None else None,
                     col["probability"]: rounded(c.actual_prob), col["rank"]: c.actual_rank,
                     col["first"]: f"{label(piece(first))} ({first_p:.3f})"})
    return rows


def stats_rows(stats: list[dict]) -> list[dict]:
    """Head statistics (model.inference.metrics.summarize_heads) as table rows: 1-based layer/head, rounded."""
    layer, head = t("common.layer"), t("common.head")
    return [{layer: s["layer"] + 1, head: s["head"] + 1, **{t(f"inspector.stat.{k}"): rounded(s.get(k)) for k in STATS}}
            for s in stats]


def averages_rows(averages: list[dict]) -> list[dict]:
    """model.inference.metrics.layer_averages as table rows: 1-based layers, then the row over everything."""
    layer = t("common.layer")
    return [{layer: t("inspector.all") if a["layer"] is None else str(a["layer"] + 1),
             **{t(f"inspector.stat.{k}"): rounded(v) for k, v in a.items() if k != "layer"}}
            for a in averages]


# ----------------------------------------------------------------------------- a classifier's tags, head patterns

def tag_rows(tags: list[tuple[int, str, float]], pieces: list[str]) -> list[dict]:
    """A token classifier's (position, label, probability) as rows: position, token, tag, probability."""
    col = {k: t(f"inspector.tag.col_{k}") for k in ("position", "token", "tag", "probability")}
    return [{col["position"]: pos, col["token"]: label(pieces[pos]), col["tag"]: tag, col["probability"]: rounded(p)}
            for pos, tag, p in tags]


def special_positions(labels_: list[str], tok) -> tuple[list[int], list[int]]:
    """The key positions of the first token ([CLS], <s>, a decoder's start) and of the separators ([SEP], </s>)."""
    def piece(name):
        i = getattr(tok, name, None)
        return label(tok.id_to_piece(i)) if isinstance(i, int) and i >= 0 else None
    bos, eos = piece("bos_id"), piece("eos_id")
    first = [i for i, x in enumerate(labels_) if x == bos]
    return first, [i for i, x in enumerate(labels_) if x == eos and i not in first]


def _head(h) -> str:
    return f"L{h.layer + 1}·H{h.head + 1}"


def pattern_rows(groups: dict) -> list[dict]:
    """model.hub.patterns.by_pattern as rows: the pattern, how many heads, the strongest heads, what it means."""
    col = {k: t(f"inspector.patterns.col_{k}") for k in ("pattern", "meaning", "count", "heads")}
    rows = []
    for pattern, heads in groups.items():
        shown = ", ".join(f"{_head(h)} ({h.score:.2f})" for h in heads[:PATTERN_HEADS])
        rows.append({col["pattern"]: t(f"inspector.patterns.name.{pattern}"), col["count"]: len(heads),
                     col["heads"]: shown + (" …" if len(heads) > PATTERN_HEADS else ""),
                     col["meaning"]: t(f"inspector.patterns.meaning.{pattern}")})
    return rows


def pattern_line(groups: dict) -> str:
    """One line over the grid: each pattern found, with its strongest heads (mixed heads left out)."""
    parts = [t("inspector.patterns.part", pattern=t(f"inspector.patterns.name.{p}"), n=len(heads),
               heads=", ".join(_head(h) for h in heads[:3]))
             for p, heads in groups.items() if p != "mixed"]
    return t("inspector.patterns.line", parts=" · ".join(parts)) if parts else t("inspector.patterns.none")
