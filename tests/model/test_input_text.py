"""What the inspector does with a learner's text before a model reads it: sentences split for a model trained on
single sentences, and words written in letters the model never saw named by their script."""
from model.data.vocabulary import sentences, unseen_scripts


def test_sentences_split_after_end_marks_and_lines():
    assert sentences("I love flowers. the cat sees the sky.") == ["I love flowers.", "the cat sees the sky."]
    assert sentences("Do you go? Yes!  I go.\nShe runs") == ["Do you go?", "Yes!", "I go.", "She runs"]
    assert sentences("I go to school.") == ["I go to school."]
    assert sentences("3.5 apples") == ["3.5 apples"], "a mark inside a number ends nothing"
    assert sentences("  \n ") == []


def test_unseen_scripts_name_the_letters_the_model_never_read():
    known = frozenset({"I", "go", "to", "school", "."})
    assert unseen_scripts(["나는", "학교에", "you", "🐈", "7"], known) == {"HANGUL": ["나는", "학교에"]}
    assert unseen_scripts(["Привет", "you"], known) == {"CYRILLIC": ["Привет"]}
    assert unseen_scripts(["나는"], frozenset({"나는", "."})) == {}, "a model that read Hangul knows the script"
    assert unseen_scripts(["学校"], known) == {"CJK": ["学校"]}
