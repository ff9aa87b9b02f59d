"""A tiny random Marian / opus-mt checkpoint in the Hugging Face layout, made offline for tests.

`build_marian_folder(path)` trains two tiny SentencePiece unigram models (English source, Korean +
German target, as Marian's source.spm / target.spm), writes vocab.json the way Marian's converter
does (</s> = 0, <unk> = 1, the pieces of both models, language codes such as >>kor<<, <pad> last),
then saves a seeded random `transformers.MarianMTModel` of that vocabulary with `save_pretrained`.
Needs transformers (a test-only dependency): import this module only from tests."""
from __future__ import annotations

import io
import json
import os
from pathlib import Path

SOURCE_TEXTS = [
    "I love you.", "The cat sat on the mat.", "My friend did not buy a red apple.",
    "Where is the station?", "She reads a book every evening.", "We went to the market yesterday.",
    "The weather is nice today.", "He has two dogs and three cats.", "Can you help me, please?",
    "This is the best coffee in town!", "They are playing football in the park.",
    "I don't know what you mean.", "The children are sleeping now.", "Open the window, please.",
    "Her brother works at a hospital.", "How much does this cost?", "Thank you very much.",
    "Let's meet at 7 o'clock.", "The train leaves at 10:45.", "I am learning Korean and German.",
    "What time is it?", "Good morning, everyone.", "The museum opens on Monday.",
    "Please write your name here.", "It was raining all day long.", "Do you like music?",
    "The old man walked slowly home.", "We need more water and bread.", "That's a great idea.",
    "My phone number is 555-0199.", "The teacher asked a difficult question.",
]
TARGET_TEXTS = [
    "나는 너를 사랑해.", "고양이가 매트 위에 앉았다.", "내 친구는 빨간 사과를 사지 않았다.",
    "역은 어디에 있어요?", "그녀는 매일 저녁 책을 읽는다.", "우리는 어제 시장에 갔다.",
    "오늘 날씨가 좋다.", "그는 개 두 마리와 고양이 세 마리가 있다.", "도와주시겠어요?",
    "Ich liebe dich.", "Die Katze saß auf der Matte.", "Mein Freund hat keinen roten Apfel gekauft.",
    "Wo ist der Bahnhof?", "Sie liest jeden Abend ein Buch.", "Wir gingen gestern auf den Markt.",
    "Das Wetter ist heute schön.", "Er hat zwei Hunde und drei Katzen.", "Kannst du mir bitte helfen?",
    "Vielen Dank!", "Wie spät ist es?", "Guten Morgen, alle zusammen.", "Das Museum öffnet am Montag.",
    "Es hat den ganzen Tag geregnet.", "Magst du Musik?", "Wir brauchen mehr Wasser und Brot.",
    "고맙습니다.", "지금 몇 시예요?", "좋은 아침입니다.", "음악을 좋아해요?", "물과 빵이 더 필요해요.",
]
LANGUAGE_CODES = (">>kor<<", ">>deu<<")


def train_spm(texts: list[str], vocab_size: int) -> bytes:
    """A tiny unigram SentencePiece model (Marian's kind: default nmt_nfkc normalisation, whitespace
    cleaned, characters it has not seen become <unk>)."""
    import sentencepiece as spm
    proto = io.BytesIO()
    with open(os.devnull, "w") as quiet:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(texts), model_writer=proto, logstream=quiet, vocab_size=vocab_size,
            model_type="unigram", character_coverage=1.0, hard_vocab_limit=False, num_threads=1,
            shuffle_input_sentence=False, input_sentence_size=0, seed_sentencepiece_size=10000)
    return proto.getvalue()


def marian_vocab(source_proto: bytes, target_proto: bytes, codes=LANGUAGE_CODES) -> dict[str, int]:
    """vocab.json as Marian writes it: </s> 0, <unk> 1, then every piece once, <pad> last."""
    import sentencepiece as spm
    vocab = {"</s>": 0, "<unk>": 1}
    for code in codes:
        vocab.setdefault(code, len(vocab))
    for proto in (source_proto, target_proto):
        sp = spm.SentencePieceProcessor(model_proto=proto)
        for i in range(sp.get_piece_size()):
            if not (sp.is_control(i) or sp.is_unknown(i)):
                vocab.setdefault(sp.id_to_piece(i), len(vocab))
    vocab["<pad>"] = len(vocab)
    return vocab


def tiny_config(vocab: dict[str, int], **overrides):
    from transformers import MarianConfig
    pad = vocab["<pad>"]
    kw = dict(vocab_size=len(vocab), d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
              decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64,
              activation_function="swish", scale_embedding=True, pad_token_id=pad, decoder_start_token_id=pad,
              eos_token_id=0, forced_eos_token_id=0, dropout=0.1, attention_dropout=0.0, activation_dropout=0.0,
              init_std=0.1)
    kw.update(overrides)
    return MarianConfig(**kw)


def build_marian_folder(path, seed: int = 0, src_vocab: int = 110, tgt_vocab: int = 130,
                        logits_noise: float = 0.3, eos_bias: float = 0.0, pad_bias: float = 0.0,
                        **config_overrides) -> Path:
    """Write a tiny random MarianMTModel folder (config.json, generation_config.json,
    model.safetensors, source.spm, target.spm, vocab.json, tokenizer_config.json) into `path`.
    Weights are N(0, init_std) (0.1 unless overridden: peaked attention, not uniform);
    final_logits_bias gets N(0, logits_noise) noise, plus eos_bias on </s> (sentences that end) and
    pad_bias on <pad> (a model that would produce pad if decoding did not ban it). Returns the folder."""
    import torch
    from transformers import MarianMTModel

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    src_proto, tgt_proto = train_spm(SOURCE_TEXTS, src_vocab), train_spm(TARGET_TEXTS, tgt_vocab)
    (path / "source.spm").write_bytes(src_proto)
    (path / "target.spm").write_bytes(tgt_proto)
    vocab = marian_vocab(src_proto, tgt_proto)
    (path / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False, indent=1), encoding="utf-8")
    (path / "tokenizer_config.json").write_text(json.dumps(
        {"source_lang": "en", "target_lang": "ko", "separate_vocabs": False, "tokenizer_class": "MarianTokenizer",
         "model_max_length": 512}), encoding="utf-8")
    cfg = tiny_config(vocab, **config_overrides)
    torch.manual_seed(seed)
    model = MarianMTModel(cfg).eval()
    with torch.no_grad():
        model.final_logits_bias.normal_(0, logits_noise)
        model.final_logits_bias[0, cfg.eos_token_id] += eos_bias
        model.final_logits_bias[0, cfg.pad_token_id] += pad_bias
    model.generation_config.bad_words_ids = [[cfg.pad_token_id]]  # as the real opus-mt checkpoints
    model.save_pretrained(path)
    return path
