"""The English -> Korean teaching corpus, the synthetic tasks, and user TSV corpora.

The corpus is generated, not downloaded, from the grammar in docs/corpus-grammar.md and the vocabulary in
assets/en_ko_lexicon.json: every sentence of the original small grammar (the "core" words, generated in
full) plus a fixed-seed sample of the whole grammar; grammar_translation() gives the Korean for any
sentence the grammar allows, sampled or not. One subject a module:

    lexicon.py    the lexicon: its words and what each may combine with
    grammar.py    a clause's choices, how they read in English and Korean, which choices are allowed
    sampling.py   the core sentences in full, and random sentences of the whole grammar
    tasks.py      each task's pairs: the en-ko corpus (cached on disk), its split, the synthetic tasks
    parser.py     reading an English sentence back: the grammar's own translation of it
    words.py      the vocabulary by part of speech, and every word form the grammar can produce
    tsv.py        a user's corpus: a UTF-8 TSV file of source<TAB>target lines

Everything is imported from here: `from model.data.corpus import task_pairs`.
"""
from model.data.corpus.grammar import (
    Clause, Sentence, clause_problem, has_final_consonant, make_sentence, sentence_problem, with_particle,
)
from model.data.corpus.lexicon import ASSETS, LEXICON_PATH, TENSES, load_lexicon, verb_id
from model.data.corpus.parser import grammar_translation, parse_sentence, readings
from model.data.corpus.sampling import SAMPLE_SEED, core_sentences, sample_sentences
from model.data.corpus.tasks import (
    ALPHABET, CACHE_ENV, GRAMMAR_SPLIT_FRACTIONS, N_HELD_OUT, SAMPLE_SIZE, SPLIT_FRACTIONS, SYNTHETIC_SIZES,
    SYNTHETIC_TASKS, TASKS, cache_dir, corpus_cache_path, corpus_sources, generate_pairs, generate_sentences,
    held_out_combinations, split_pairs, synthetic_pairs, task_pairs, train_head,
)
from model.data.corpus.tsv import read_tsv_corpus
from model.data.corpus.words import (
    FUNCTION_WORDS, PARTS_OF_SPEECH, PUNCTUATION, known_words, split_english, vocabulary_by_part_of_speech,
)

__all__ = [
    "ALPHABET", "ASSETS", "CACHE_ENV", "Clause", "FUNCTION_WORDS", "GRAMMAR_SPLIT_FRACTIONS", "LEXICON_PATH",
    "N_HELD_OUT", "PARTS_OF_SPEECH", "PUNCTUATION", "SAMPLE_SEED", "SAMPLE_SIZE", "SPLIT_FRACTIONS", "SYNTHETIC_SIZES",
    "SYNTHETIC_TASKS", "Sentence", "TASKS", "TENSES", "cache_dir", "clause_problem", "core_sentences",
    "corpus_cache_path", "corpus_sources", "generate_pairs", "generate_sentences", "grammar_translation",
    "has_final_consonant", "held_out_combinations", "known_words", "load_lexicon", "make_sentence", "parse_sentence",
    "read_tsv_corpus", "readings", "sample_sentences", "sentence_problem", "split_english", "split_pairs",
    "synthetic_pairs", "task_pairs", "train_head", "verb_id", "vocabulary_by_part_of_speech", "with_particle",
]
