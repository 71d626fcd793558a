"""Rejecting truncated and looping answers without rejecting legitimate repetitive pages."""

import pytest

from folioflow.ocr.errors import OutputValidationError
from folioflow.ocr.vlm.validity import check_answer, find_line_loop, find_tail_loop

GOOD = "# Results\n\nTotal revenue grew 12% to $4,210 million in fiscal 2025, driven by advisory fees.\n"


def test_truncated_answers_are_rejected_with_token_count():
    with pytest.raises(OutputValidationError, match=r"truncated: finish_reason=length after 8192 tokens"):
        check_answer(GOOD, "length", 8192)
    with pytest.raises(OutputValidationError, match="finish_reason=None"):
        check_answer(GOOD, None)


def test_valid_answer_passes():
    check_answer(GOOD, "stop", 40)


@pytest.mark.parametrize(
    "tail",
    [
        "the the " * 40,  # word loop
        "\\frac{1}{2} + " * 30,  # formula loop
        "Revenue increased due to higher fees. " * 8,  # sentence loop
        "0" * 200,  # digit run
    ],
)
def test_tail_loops_are_found(tail):
    assert find_tail_loop(GOOD + tail) is not None
    with pytest.raises(OutputValidationError, match="repetition"):
        check_answer(GOOD + tail, "stop")


@pytest.mark.parametrize(
    "text",
    [
        GOOD
        + "<table>"
        + "<tr><td>N/A</td><td>N/A</td><td>-</td></tr>" * 60
        + "</table>",  # HTML table of N/A
        GOOD + "| Item | Value |\n|---|---|\n" + "| N/A | 0 |\n" * 60,  # pipe table of zeros
        GOOD + "1 Introduction " + "." * 120 + " 3\n2 Results " + "." * 120 + " 7\n",  # dot leaders
        GOOD + "- 1\n- 2\n- 3\n- 4\n",  # short list
        GOOD + "aaaa",  # short run
    ],
)
def test_legitimate_repetition_is_not_a_loop(text):
    check_answer(text, "stop")


def test_repeated_line_in_the_middle_is_found():
    text = (
        GOOD + "Signed on behalf of the Borrower\n" * 12 + "\nEnd of agreement, with a distinct last line.\n"
    )
    line = find_line_loop(text)
    assert line == ("Signed on behalf of the Borrower", 12)
    assert find_line_loop(GOOD + "Signed on behalf of the Borrower\n" * 11) is None


def test_reason_names_the_unit():
    with pytest.raises(OutputValidationError, match=r"'COCO.*' x\d+|'CO' x\d+"):
        check_answer("some" + "CO" * 100, "stop")
