"""48 sentence-boundary rules, one example each, with the expected split.

The phenomena are those of the "golden rules" of Pragmatic Segmenter / pySBD (English); the
sentences are our own. :func:`score` runs a splitter over them; ``bench/chunker_sse/bench_chunker.py`` prints
the score and ``tests/core/test_chunker.py`` keeps it from falling.
"""

from __future__ import annotations

from collections.abc import Callable

#: (rule, text, expected sentences), in the order of the original list.
GOLDEN: tuple[tuple[str, str, list[str]], ...] = (
    ("simple period", "The train left early. We missed it.", ["The train left early.", "We missed it."]),
    ("question mark", "Where did you park? The lot is full.", ["Where did you park?", "The lot is full."]),
    ("exclamation mark", "Watch out! The floor is wet.", ["Watch out!", "The floor is wet."]),
    ("one-letter middle initial", "Our guide was Carla M. Reyes.", ["Our guide was Carla M. Reyes."]),
    ("p. before a number", "The chart is on p. 112 of the report.", ["The chart is on p. 112 of the report."]),
    ("lowercase co. mid-sentence", "Did Tom and co. enjoy the show?", ["Did Tom and co. enjoy the show?"]),
    ("Co. mid-sentence", "We signed with Hale, Monk & Co. last spring.",
     ["We signed with Hale, Monk & Co. last spring."]),
    ("lowercase co. at the end", "Send it to Tom and co. They will sort it out.",
     ["Send it to Tom and co.", "They will sort it out."]),
    ("Co. at the end", "We signed with Hale, Monk & Co. It took a week.",
     ["We signed with Hale, Monk & Co.", "It took a week."]),
    ("Mt. before a name", "We hiked up Mt. Rainier on Sunday.", ["We hiked up Mt. Rainier on Sunday."]),
    ("St. as saint and st. as street", "St. Anne's School stands on 3rd st. by the park.",
     ["St. Anne's School stands on 3rd st. by the park."]),
    ("Jr. with a possessive", "This is Sammy Davis Jr.'s hat.", ["This is Sammy Davis Jr.'s hat."]),
    ("initialism mid-sentence", "She toured the U.K. in the autumn.", ["She toured the U.K. in the autumn."]),
    ("two-letter initialism at the end", "He studied in the U.K. Where did you study?",
     ["He studied in the U.K.", "Where did you study?"]),
    ("U.S. at the end", "My cousin moved to the U.S. Have you been there?",
     ["My cousin moved to the U.S.", "Have you been there?"]),
    ("U.S. before a capitalised noun", "She joined the U.S. Navy in Norfolk.",
     ["She joined the U.S. Navy in Norfolk."]),
    ("U.S. before a lowercase word", "They stayed in the U.S. for six months.",
     ["They stayed in the U.S. for six months."]),
    ("a.m. and P.M. before a name",
     "By 7 a.m. Ms. Lee was at her desk. She went home at 5 P.M. Ms. Lee then cooked dinner.",
     ["By 7 a.m. Ms. Lee was at her desk.", "She went home at 5 P.M.", "Ms. Lee then cooked dinner."]),
    ("decimal amount", "The ticket costs $12.50 at the door.", ["The ticket costs $12.50 at the door."]),
    ("decimal amount at the end", "The ticket costs $12.50. Kids go free.",
     ["The ticket costs $12.50.", "Kids go free."]),
    ("sentence inside parentheses", "She runs the bakery (It opened in 1998 as a small shop.) on Main Street.",
     ["She runs the bakery (It opened in 1998 as a small shop.) on Main Street."]),
    ("e-mail address", "Write to Sam.Ortiz@mail.example.org. He answers quickly.",
     ["Write to Sam.Ortiz@mail.example.org.", "He answers quickly."]),
    ("web address", "The form is at: https://forms.example.42.net/sign-up/new_member.html. Fill it in today.",
     ["The form is at: https://forms.example.42.net/sign-up/new_member.html.", "Fill it in today."]),
    ("single-quoted speech then lowercase", "He looked up, 'That was close.' he whispered.",
     ["He looked up, 'That was close.' he whispered."]),
    ("double-quoted speech then lowercase", 'He looked up, "That was close." he whispered.',
     ['He looked up, "That was close." he whispered.']),
    ("double-quoted speech then a sentence", 'He looked up, "That was close." He sat down on the step.',
     ['He looked up, "That was close."', "He sat down on the step."]),
    ("double exclamation", "Amazing!! You really did it.", ["Amazing!!", "You really did it."]),
    ("double question", "Anyone?? Please answer me.", ["Anyone??", "Please answer me."]),
    ("!? pair", "Really!? That sounds wrong.", ["Really!?", "That sounds wrong."]),
    ("?! pair", "Now?! We are not ready.", ["Now?!", "We are not ready."]),
    ("list 1.) without periods", "1.) Boil the water 2.) Add the pasta",
     ["1.) Boil the water", "2.) Add the pasta"]),
    ("list 1.) with periods", "1.) Boil the water. 2.) Add the pasta.",
     ["1.) Boil the water.", "2.) Add the pasta."]),
    ("list 1) without periods", "1) Boil the water 2) Add the pasta", ["1) Boil the water", "2) Add the pasta"]),
    ("list 1) with periods", "1) Boil the water. 2) Add the pasta.", ["1) Boil the water.", "2) Add the pasta."]),
    ("list 1. without periods", "1. Boil the water 2. Add the pasta", ["1. Boil the water", "2. Add the pasta"]),
    ("list 1. with periods", "1. Boil the water. 2. Add the pasta.", ["1. Boil the water.", "2. Add the pasta."]),
    ("bulleted numbers", "• 7. Boil the water • 8. Add the pasta", ["• 7. Boil the water", "• 8. Add the pasta"]),
    ("hyphen-bulleted numbers", "⁃7. Boil the water ⁃8. Add the pasta", ["⁃7. Boil the water", "⁃8. Add the pasta"]),
    ("lettered list", "a. Boil the water b. Add the pasta c. Drain it well",
     ["a. Boil the water", "b. Add the pasta", "c. Drain it well"]),
    ("N°. with a dotted number", "The parcel is listed as N°. 4471.20.9. It ships on Monday.",
     ["The parcel is listed as N°. 4471.20.9.", "It ships on Monday."]),
    ("brand with an exclamation mark", "He writes for Yahoo! in the sports section.",
     ["He writes for Yahoo! in the sports section."]),
    ("roman I at the end and as an initial", "It was a long night, you and I. Have you met Henry I. Lowe?",
     ["It was a long night, you and I.", "Have you met Henry I. Lowe?"]),
    ("spaced ellipsis before a closing quote",
     "She wrote that by waiting patiently, “the answer would come on its own. . . .”",
     ["She wrote that by waiting patiently, “the answer would come on its own. . . .”"]),
    ("bracketed ellipsis", '"Darwin [...] compared the finches of nearby islands [...]" (Lane 12).',
     ['"Darwin [...] compared the finches of nearby islands [...]" (Lane 12).']),
    ("spaced ellipsis ending a sentence",
     "When words are cut at the very end of a sentence, show it with spaced dots and then the final "
     "period . . . . The next one starts here.",
     ["When words are cut at the very end of a sentence, show it with spaced dots and then the final "
      "period . . . .",
      "The next one starts here."]),
    ("four dots then a sentence", "I never said that.... He walked out.", ["I never said that....", "He walked out."]),
    ("ellipses inside one sentence",
     "I was only ... well, what I meant...look . . . the point is . . . I did not know.",
     ["I was only ... well, what I meant...look . . . the point is . . . I did not know."]),
    ("spaced ellipses around sentences",
     "The old custom faded slowly . . . as people moved to the cities and away from the farms. . . . "
     "The custom was never quite lost. . . .",
     ["The old custom faded slowly . . . as people moved to the cities and away from the farms.",
      ". . . The custom was never quite lost. . . ."]),
)


def score(split: Callable[[str], list[str]]) -> tuple[int, list[str]]:
    """(rules passed, names of the rules failed) for a splitter."""
    failed = [rule for rule, text, expected in GOLDEN if split(text) != expected]
    return len(GOLDEN) - len(failed), failed


if __name__ == "__main__":
    from bidi_tts.chunker import split_sentences

    passed, failed = score(split_sentences)
    print(f"golden rules: {passed}/{len(GOLDEN)}")
    for rule, text, expected in GOLDEN:
        got = split_sentences(text)
        if got != expected:
            print(f"FAIL {rule}: {got}")
