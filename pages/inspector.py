"""Attention inspector: a real trained Transformer's heads on the sentence you type."""
from pathlib import Path

import streamlit as st

from pages.views import inspector as ins
from pages.views import inspector_reading as rd
from pages.views.inspector_hub import hub_box
from pages.views.inspector_view import show_view
from app.charts.curves import bar_chart
from app.charts.export import csv_text
from app.fast import uses_element
from app.fast.attention_view import available as attention_view_available
from app.charts.headview import head_view
from app.charts.heatmaps import attention_heatmap, grid_cell, head_grid
from app.format import code_span
from app.i18n import UserError, options, t
from app.resources import (available_models, card, fill_mask, forward_pass, lm_positions, load_model, next_token,
                           shared_figure, shared_table, shared_view, translation, vocabulary,
                           weights_stamp)
from app.state import OneBased, between, keep, open_box, open_box_now, open_tabs, opened_run
from app.page_inputs import INSPECTOR, SECTIONS
from app.ui import error, show_figure, show_matrix, table, text
from model.training.checkpoint import CheckpointError
from model.inference.decode import lm_sample, top_candidates
from model.inference.metrics import layer_averages, summarize_heads
from model.hub.patterns import by_pattern, head_patterns
from model.lessons.probe import draw_seed, inspector_examples, kind_weights, pick_map, step_cross_attention

st.title(t("inspector.title"))
text("inspector.intro")

models = available_models()
if not models:
    error(UserError("inspector.errors.no_models"))
    st.stop()
names = list(models)
opened = opened_run()  # "Open in inspector" on the training page
if opened is not None:
    if f"run: {opened}" in models:
        st.session_state["insp_model"] = f"run: {opened}"
    else:
        st.warning(t("inspector.run_missing", id=code_span(opened[:100])))  # from the link: shown verbatim
choice = st.selectbox(t("inspector.model"), names, **INSPECTOR.model.keep(names[0], valid=names))
hub_box()
path = models[choice]
try:
    loaded = load_model(path)
except CheckpointError as e:
    error(UserError(ins.load_error_key(str(e)), detail=str(e)))  # the headline names the real reason
    st.stop()
stamp = weights_stamp(path)  # the version of the weights this run draws
cfg, tok = loaded.config, loaded.tokenizer
if tok is None:
    error(UserError("inspector.errors.no_tokenizer"))
    st.stop()
arch = cfg.architecture
facts = card(path)
st.caption(" · ".join(ins.summary(facts)))
for line in ins.conversion_lines(loaded.meta):  # what the import changed (float16 weights read as float32)
    st.caption(line)
with st.expander(t("inspector.card.expander")):
    table(shared_view("card_rows", (str(path), stamp), lambda: ins.card_rows(facts)),
          key="insp-card")
    differences = ins.difference_lines(facts)  # a pretrained model's, one sentence each
    if differences:
        st.markdown(t("inspector.card.differences_title"))
        st.markdown(differences)
    if ins.score_note(facts):
        st.caption(ins.score_note(facts))
card_file = Path(path) / "CARD.md"
if card_file.is_file():
    with st.expander(t("inspector.card.original")):
        st.code(card_file.read_text(encoding="utf-8", errors="replace"), language="markdown")  # verbatim

vocab = vocabulary(path)
groups = inspector_examples(facts.task, arch, vocab.examples)
if getattr(tok, "mask_token", "[MASK]") != "[MASK]":  # the examples' [MASK] as this model writes it (RoBERTa: <mask>)
    groups = [(kind, [s.replace("[MASK]", tok.mask_token) for s in sentences]) for kind, sentences in groups]
choices = [s for _, sentences in groups for s in sentences]
if st.session_state.get("insp_for") != choice:  # a new model: start from its first example
    st.session_state["insp_for"] = choice
    st.session_state["insp_text"] = choices[0]


# ----------------------------------------------------------------------------- the sentence
# Everything below the model's card follows the sentence: the sentence box, the palette, the tokens, the model's
# run and the attention. It is one fragment: a new sentence, typed, picked or built word by word,
# reruns this section, not the title, the model's choice and its card above it. Another model reruns the page.
SENTENCE = "insp-sentence"


@st.fragment(key=SENTENCE)
def sentence_section(path, stamp, loaded, facts, vocab, groups, choices):
    if weights_stamp(path) != stamp:  # a training run saved newer weights: the card above changes too
        st.rerun()
    cfg, tok, arch = loaded.config, loaded.tokenizer, loaded.config.architecture
    st.selectbox(t("inspector.examples"), choices, index=None, placeholder=t("inspector.pick_example"),
                 key="insp_example", on_change=lambda: st.session_state.update(insp_text=st.session_state["insp_example"] or st.session_state["insp_text"]))
    raw = st.text_area(t("inspector.your_sentence"), height=80, **INSPECTOR.text.keep(choices[0]))
    sentence, cut = ins.clean_input(raw)
    # what the model reads: a translation model each sentence on its own (it was trained on single sentences),
    # every part cut to the model's positions; the words it never saw are looked for in what it reads
    limit = cfg.max_len - 2
    reading = rd.read(sentence, tok, limit, by_sentence=arch == "encoder-decoder")
    unknown = ins.unknown_in(" ".join(reading.parts), vocab.words, tok) if vocab.found else []

    # Words the model never saw open the box once (the palette offers the ones it knows); opened here, not by an
    # argument of the fragment, which its own reruns would pass again after the learner closed the box.
    if unknown and st.session_state.get("insp_unknown_seen") != unknown:
        open_box_now("insp_vocab")
    st.session_state["insp_unknown_seen"] = unknown
    palette_box(groups, vocab.palette, vocab.words if vocab.found else None)

    if cut:
        st.warning(t("inspector.cut", n=ins.MAX_CHARS))
    if not sentence:
        st.info(t("inspector.type_sentence"))
        return
    if not vocab.found:
        st.caption(t("inspector.no_training_data"))
    never = ins.unknown_list(unknown, vocab.words)
    rd.say_cuts(reading, limit)
    rd.say_scripts(unknown, vocab.words, facts.task)
    if len(reading.parts) > 1:
        st.info(t("inspector.sentences_each", n=len(reading.parts)))
    part = rd.pick_sentence(reading)

    # ----------------------------------------------------------------------------- tokenization
    ids = reading.ids[part]
    pieces = [tok.id_to_piece(i) for i in ids]
    with open_box(t("inspector.tokenization_title", n=len(ids)), key="insp_tokens") as token_box:
        text("inspector.tokenization")
        if token_box.open:  # a data grid (its ticks for "seen in training"): drawn when someone looks at it
            st.dataframe(ins.token_table(ids, pieces, tok, vocab.pieces if vocab.found else None), hide_index=True)

    # ----------------------------------------------------------------------------- run the model
    src_labels = tgt_labels = ctx = None
    steps = result = None
    reads_pair = arch == "encoder-only" and facts.task in ins.ENCODER_TASKS
    if not reads_pair and (st.session_state.get("insp_mlm_pair") or st.query_params.get("pair") or "").strip():
        st.info(t("inspector.pair_unused"))  # kept from a link or another model: say it is not read
    if arch == "encoder-decoder":
        c1, c2 = st.columns([1, 2])
        methods = options("inspector.method", ("beam", "greedy"))
        method = c1.radio(t("inspector.decoding"), list(methods), horizontal=True, format_func=methods.get,
                          **INSPECTOR.method.keep("beam", valid=methods))
        beam = c2.slider(t("inspector.beam_size"), 2, 8, disabled=method == "greedy",
                         **INSPECTOR.beam.keep(4))
        source = ("translation", tok.decode(ids), method == "greedy", beam)
        result = translation(path, *source[1:])
        st.subheader(t("inspector.translation"))
        if unknown:
            st.warning(t("inspector.unknown_translation", words=never))
        every = [translation(path, tok.decode(p), method == "greedy", beam).text for p in reading.ids]
        st.code(" ".join(x or "∅" for x in every) if len(every) > 1 else result.text or "∅", language=None)
        if not result.text:  # say why there is nothing
            st.info(t("inspector.empty_translation" if not result.out_ids else "inspector.empty_decoded"))
        if not result.finished:
            st.caption(t("inspector.no_eos"))
        att = result.attention
        src_labels, tgt_labels = ins.labels(result.src_pieces), ins.labels(result.tgt_pieces)
        steps = result.steps
    elif arch == "decoder-only" and facts.task != "features":  # "features": no head (a GPT2Model), attention only
        ctx = [tok.bos_id] + ids
        c1, c2 = st.columns(2)
        temperature = c1.slider(t("inspector.temperature"), 0.0, 2.0, step=0.05,
                                **keep("insp_temperature", 1.0, url="temperature", valid=between(0.0, 2.0)))
        top_k = c2.slider(t("inspector.top_k"), 0, 50, **keep("insp_top_k", 10, url="top_k", valid=range(0, 51)))
        source = ("next_token", tuple(ctx), float(temperature), int(top_k))
        probs, att = next_token(path, ctx, temperature, top_k)
        top = [(tok.id_to_piece(i), p, i) for i, p in top_candidates(probs, 10)]
        st.subheader(t("inspector.next_token"))
        if unknown:
            st.warning(t("inspector.unknown_lm", words=never))
        fig = bar_chart(ins.labels([pc for pc, _, _ in top]), [p for _, p, _ in top], horizontal=True, y_range=[0, 1],
                        x_title=t("inspector.probability"), y_title=t("inspector.token"))
        show_figure(fig, name="next-token", key="next-token",
                    csv=csv_text(["piece", "id", "probability"], [(pc, i, p) for pc, p, i in top]))

        def _append():
            draw = st.session_state.get("insp_draws", 0)
            st.session_state["insp_draws"] = draw + 1
            seed = draw_seed(int(st.session_state.get("insp_seed") or 0), draw)
            nxt = lm_sample(loaded.model, ctx, temperature=temperature, top_k=top_k, seed=seed)
            if nxt == tok.eos_id:
                st.session_state["insp_note"] = "eos"
                return
            st.session_state["insp_text"] = tok.decode(ids + [nxt])

        def _new_seed():
            st.session_state["insp_seed"] = ins.fresh_seed(st.session_state.get("insp_seed"))
            st.session_state["insp_draws"] = 0

        c1, c2, c3 = st.columns([2, 1, 2], vertical_alignment="bottom")
        c1.number_input(t("inspector.seed"), 0, ins.MAX_SEED, step=1, on_change=lambda: st.session_state.update(insp_draws=0),
                        **keep("insp_seed", 0, url="seed", valid=between(0, ins.MAX_SEED)))
        c2.button(t("inspector.new_seed"), key="insp_new_seed", on_click=_new_seed)
        c3.button(t("inspector.append"), key="insp_append", on_click=_append, type="primary")
        st.caption(t("inspector.seed_caption", seed=st.session_state["insp_seed"], draw=st.session_state.get("insp_draws", 0) + 1))
        if st.session_state.pop("insp_note", None) == "eos":
            st.info(t("inspector.eos_sampled"))
        tgt_labels = ins.labels([tok.id_to_piece(i) for i in ctx])
    elif reads_pair:  # a BERT-family encoder: its head's prediction (if any), and its attention on [CLS] … [SEP]
        second = st.text_input(t("inspector.mlm.second"), max_chars=ins.MAX_CHARS, help=t("inspector.mlm.second_help"),
                               **keep("insp_mlm_pair", "", url="pair"))
        try:
            source = ("fill_mask", sentence, (second or "").strip())
            filled = fill_mask(path, sentence, second)
        except ValueError as e:
            error(UserError("inspector.errors.too_long"), detail=str(e))
            return
        att = filled.attention
        src_labels = ins.labels(filled.pieces)
        if filled.one_segment:
            st.info(t("inspector.mlm.one_segment"))
        if facts.task != "mlm":
            rd.encoder_head(filled, loaded.meta, (str(path), stamp, *source))
        else:
            st.subheader(t("inspector.mlm.title", mask=ins.code(tok.id_to_piece(tok.mask_id))))
        if facts.task == "mlm" and not filled.predictions:
            st.info(t("inspector.mlm.no_mask", mask=tok.id_to_piece(tok.mask_id)))
        for pos, top in filled.predictions:
            fig = bar_chart(ins.labels([pc for pc, _ in top]), [p for _, p in top], horizontal=True, y_range=[0, 1],
                            title=t("inspector.mlm.at", position=pos, mask=filled.pieces[pos]), x_title=t("inspector.probability"),
                            y_title=t("inspector.token"))
            show_figure(fig, name=f"mask-{pos}", csv=csv_text(["piece", "probability"], top), key=f"mask-{pos}")
    else:
        source = ("forward", tuple(ids))
        att = forward_pass(path, ids)
        src_labels = tgt_labels = ins.labels(pieces)
        if facts.task == "features":  # a checkpoint without a head (GPT2Model): attention only
            st.info(t("inspector.no_head_lm" if arch == "decoder-only" else "inspector.no_head_mlm"))
        if unknown:
            st.warning(t("inspector.unknown_other", words=never))

    # ----------------------------------------------------------------------------- attention
    # What follows depends only on the model version, what was run on it (`source`), the language and the
    # controls below: every session asking for the same gets the same figures and tables, built once (shared_view).
    view = (str(path), stamp, *source)
    st.subheader(t("inspector.attention"), anchor=SECTIONS["inspector.attention"])

    attention_section(view, att, arch, steps, src_labels, tgt_labels, path, ctx, tok, len(ids), cfg.kv_heads)


def _add_word(key: str, known: frozenset[str] | None = None) -> None:
    """A palette click: append the word to the sentence box, and clear the palette for the next click. The new
    sentence changes the section around the palette, so that section reruns (not the palette's own fragment,
    nor the page above the sentence)."""
    st.session_state["insp_text"] = ins.append_word(st.session_state.get("insp_text", ""), st.session_state.get(key) or "",
                                                    known)
    st.session_state[key] = None
    st.rerun(SENTENCE)


# The palette (a button for each of the model's ~350 words) is drawn only while its box is open, and only its
# open word group: drawn closed, its buttons were a large part of the browser's work each time the page opened
# (docs/benchmarks.md). The box is a fragment: opening it or another word group reruns the box only; a word
# click changes the sentence, so the sentence's section then reruns (_add_word).
@st.fragment
def palette_box(groups, palette: dict, known: frozenset[str] | None = None) -> None:
    box = open_box(t("inspector.vocabulary_title"), key="insp_vocab")
    with box:
        text("inspector.vocabulary")
        st.markdown(ins.example_lines(groups))
        if palette and box.open:
            group_labels = {group: ins.known_label(f"inspector.pos.{group}", group) for group in palette}
            for group, tab in open_tabs(group_labels, key="insp_pal_tab"):
                if tab.open:
                    tab.pills(group_labels[group], palette[group], key=f"insp_pal_{group}", on_change=_add_word,
                              args=(f"insp_pal_{group}", known), label_visibility="collapsed")
        elif not palette:
            st.caption(t("inspector.palette_none"))


# The controls inside each tab change only that tab's figure: each is a fragment, so moving one reruns the
# fragment only (a new sentence reruns the sentence's section, another model the page; the attention kind, the
# section below).
@st.fragment
def grid_detail(view, weights, kind, kind_name, q_labels, k_labels, q_title, k_title):
    """One layer's and head's map (or the mean over layers / heads), picked under the grid."""
    n_layers, n_heads = weights.shape[:2]
    c1, c2 = st.columns(2)
    average = t("inspector.average")
    pick = lambda i: average if i < 0 else f"{i + 1}"  # -1 = the mean over all layers / heads
    layer = c1.selectbox(t("common.layer"), [*range(n_layers), -1], format_func=pick,
                         **keep("insp_layer", 0, url="layer", valid=[*range(n_layers), -1], codec=OneBased))
    head = c2.selectbox(t("common.head"), [*range(n_heads), -1], format_func=pick,
                        **keep("insp_head", 0, url="head", valid=[*range(n_heads), -1], codec=OneBased))
    w = pick_map(weights, layer, head)  # (Lq, Lk)
    fig = shared_figure("detail", (*view, kind, layer, head), lambda: attention_heatmap(
        w, q_labels, k_labels, query_title=q_title, key_title=k_title,
        title=f"{kind_name} · {t('common.layer')} {pick(layer)} · {t('common.head')} {pick(head)}"))
    show_matrix(fig, w, name=f"{kind}-L{pick(layer)}-H{pick(head)}", row_labels=q_labels, col_labels=k_labels, key="detail")


@st.fragment
def head_view_tab(view, weights, kind, q_labels, k_labels, q_title, k_title):
    text("inspector.head_view")
    n_layers, n_heads = weights.shape[:2]
    hl = st.selectbox(t("common.layer"), range(n_layers), format_func=lambda i: f"{i + 1}",
                      **keep("insp_hv_layer", 0, url="hv_layer", valid=range(n_layers), codec=OneBased))
    head_word = t("common.head")
    on = st.multiselect(t("inspector.heads_shown"), list(range(n_heads)), format_func=lambda i: f"{head_word} {i + 1}",
                        placeholder=t("common.choose_options"),
                        **keep("insp_hv_heads", list(range(n_heads)), url="hv_heads", valid=range(n_heads)))
    if on:
        show_figure(shared_figure("headview", (*view, kind, hl, tuple(on)), lambda: head_view(
            weights[hl], q_labels, k_labels, on, query_title=q_title, key_title=k_title, head_title=head_word)),
                    name=f"headview-{kind}-L{hl + 1}", key="headview")
    else:
        st.info(t("inspector.pick_head"))


@st.fragment
def positions_tab(path, ctx, tok):
    """A decoder-only model, position by position."""
    text("inspector.positions")
    cands = lm_positions(path, ctx)
    st.dataframe(ins.position_rows(ctx, cands, tok.id_to_piece), hide_index=True)
    pos = (st.slider(t("inspector.position"), 1, len(cands),
                     **keep("insp_pos", len(cands), url="pos", valid=range(1, len(cands) + 1))) - 1) if len(cands) > 1 else 0
    here = cands[pos]
    if here.actual is not None:
        st.markdown(t("inspector.position_next", position=pos + 1, token=ins.code(ins.label(tok.id_to_piece(here.actual))),
                      prob=here.actual_prob, rank=here.actual_rank))
    else:
        st.markdown(t("inspector.position_last", position=pos + 1))
    show_figure(bar_chart(ins.labels([tok.id_to_piece(i) for i, _ in here.top]), [p for _, p in here.top],
                          horizontal=True, y_range=[0, 1], title=t("inspector.top_candidates"),
                          x_title=t("inspector.probability"), y_title=t("inspector.token"), colors="#d62728"),
                name=f"position{pos + 1}-top", key="postop")


@st.fragment
def steps_tab(view, steps, att, src_labels, tok, n_layers):
    """An encoder-decoder's greedy or beam decoding, step by step."""
    text("inspector.steps")
    tstep = (st.slider(t("common.step"), 1, len(steps), **INSPECTOR.step.keep(1, valid=range(1, len(steps) + 1))) - 1
             if len(steps) > 1 else 0)
    sl = st.selectbox(t("common.layer"), range(n_layers), format_func=lambda i: f"{i + 1}",
                      **INSPECTOR.step_layer.keep(n_layers - 1, valid=range(n_layers)))
    chosen = tok.id_to_piece(steps[tstep].token)
    st.markdown(t("inspector.step_wrote", step=tstep + 1, token=ins.label(chosen).replace("`", "ʼ"),
                  prob=steps[tstep].prob))
    c1, c2 = st.columns(2)
    with c1:
        show_figure(shared_figure("steprow", (*view, tstep, sl), lambda: bar_chart(
            src_labels, step_cross_attention(att, sl, tstep), horizontal=True, y_range=[0, 1],
            title=t("inspector.cross_title", layer=sl + 1), x_title=t("common.weight"),
            y_title=t("inspector.source_key"))), name=f"step{tstep + 1}-cross", key="steprow")
    with c2:
        top = [(tok.id_to_piece(i), p) for i, p in steps[tstep].top]
        show_figure(shared_figure("steptop", (*view, tstep), lambda: bar_chart(
            ins.labels([pc for pc, _ in top]), [p for _, p in top], horizontal=True, y_range=[0, 1],
            title=t("inspector.top_candidates"), x_title=t("inspector.probability"), y_title=t("inspector.token"),
            colors="#d62728")), name=f"step{tstep + 1}-top", key="steptop")


def patterns_of(view, kind, weights, labels, tok):
    """Each head named by its classic pattern (model.hub.patterns), grouped, for this sentence and kind."""
    first, separators = ins.special_positions(labels, tok)
    return shared_view("patterns", (*view, kind), lambda: by_pattern(head_patterns(weights, first, separators)))


# The kind of attention and the tabs are a fragment: another kind or another tab reruns this section, not the
# model. Only the open tab is drawn (a tab's click reruns the section): the stats tab's data grid, the head view
# and the decoding steps, drawn hidden, were a fifth of the browser's work of each new sentence.
@st.fragment
def attention_section(view, att, arch, steps, src_labels, tgt_labels, path, ctx, tok, n_pieces, kv_heads):
    kinds = att.kinds()
    kind_names = options("inspector.kind", kinds)
    kind = st.radio(t("inspector.which_attention"), kinds, format_func=kind_names.get, horizontal=True,
                    **keep("insp_kind", kinds[0], url="kind", valid=kinds))
    q_labels = {"encoder_self": src_labels, "decoder_self": tgt_labels, "cross": tgt_labels}[kind]
    k_labels = {"encoder_self": src_labels, "decoder_self": tgt_labels, "cross": src_labels}[kind]
    if kind == "cross":
        q_title, k_title = t("inspector.target_query"), t("inspector.source_key")
    else:
        q_title, k_title = t("common.query"), t("common.key")
    weights = kind_weights(att, kind)  # (layers, H, Lq, Lk)
    n_layers, n_heads, n_q, n_k = weights.shape
    st.caption(t("common.rows_cols_cross") if kind == "cross" else t("common.rows_cols"))
    steps_name = "positions" if arch == "decoder-only" else "steps"
    tabs = ("grid", "head", steps_name, "stats") if ctx is not None or arch != "decoder-only" else ("grid", "head", "stats")
    labels = {name: t(f"inspector.tab.{name}") for name in tabs}
    in_browser = attention_view_available()
    for name, tab in open_tabs(labels, key=INSPECTOR.tab.key, url=INSPECTOR.tab.url):
        if not tab.open:
            continue
        with tab:
            if name == "grid":
                st.markdown(t("inspector.grid_intro", layers=n_layers, heads=n_heads, rows=n_q, cols=n_k))
                note = rd.map_note(n_pieces, k_labels, tok) if kind != "decoder_self" or ctx is not None else None
                if note:  # the pieces above and the tokens the model adds ([CLS], </s>, a start token)
                    st.caption(note)
                if kind != "cross":  # the classic heads, named, so that nobody has to scroll through every map
                    st.markdown(ins.pattern_line(patterns_of(view, kind, weights, k_labels, tok)))
                if in_browser:  # layers, heads, tiles and tokens answered in the browser
                    show_view(view, att, kind, src_labels, tgt_labels, kv_heads, arch == "encoder-decoder", "grid")
                    continue
                if uses_element():  # st.plotly_chart sends no clicks on a heatmap
                    st.caption(t("inspector.grid_click"))
                clicked = show_figure(shared_figure("grid", (*view, kind), lambda: head_grid(
                    weights, layer_title=t("common.layer"), head_title=t("common.head"),
                    kv_labels=ins.kv_labels(n_heads, kv_heads))), name=f"grid-{kind}", key="grid",
                    clickable=True)
                cell = grid_cell(clicked, weights.shape) if clicked else None
                if cell is not None:  # a tile clicked: its layer and head open below (the pickers show them)
                    st.session_state["insp_layer"], st.session_state["insp_head"] = cell
                grid_detail(view, weights, kind, kind_names[kind], q_labels, k_labels, q_title, k_title)
            elif name == "head" and in_browser:
                text("inspector.head_view_live")
                show_view(view, att, kind, src_labels, tgt_labels, kv_heads, arch == "encoder-decoder", "heads")
            elif name == "head":
                head_view_tab(view, weights, kind, q_labels, k_labels, q_title, k_title)
            elif name == "positions":
                positions_tab(path, ctx, tok)
            elif name == "steps":
                if arch != "encoder-decoder" or not steps:
                    st.info(t("inspector.steps_none"))
                else:
                    steps_tab(view, steps, att, src_labels, tok, n_layers)
            else:
                if kind == "cross":
                    st.caption(t("inspector.patterns.self_only"))
                else:
                    st.markdown(t("inspector.patterns.title"))
                    text("inspector.patterns")
                    groups = patterns_of(view, kind, weights, k_labels, tok)
                    table(shared_view("pattern_rows", (*view, kind), lambda: ins.pattern_rows(groups)), key="insp-patterns")
                text("inspector.stats")
                stats = shared_view("stats", (*view, kind), lambda: summarize_heads(att, kind))
                st.dataframe(shared_table("stats_rows", (*view, kind), lambda: ins.stats_rows(stats)), hide_index=True)
                st.markdown(t("inspector.averages_title"))
                table(shared_view("averages_rows", (*view, kind), lambda: ins.averages_rows(layer_averages(stats))),
                      key="insp-averages")


sentence_section(path, stamp, loaded, facts, vocab, groups, choices)
