"""The ways a person writes a value, for the probes of ``judges_text``: a count in words, money
with and without its sign, a date in words or figures, a time on a 12- or 24-hour clock."""

from __future__ import annotations

from datetime import date, datetime, timedelta

ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
).split()
TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
MONTH_NAMES = (
    "January February March April May June July August September October November December"
).split()


def spell(number: int) -> str:
    """``number`` (0 to 999,999) in words: 21 → "twenty-one", 1500 → "one thousand five
    hundred"."""
    if number < 20:
        return ONES[number]
    if number < 100:
        tens, ones = divmod(number, 10)
        return TENS[tens] + (f"-{ONES[ones]}" if ones else "")
    if number < 1000:
        hundreds, rest = divmod(number, 100)
        return f"{ONES[hundreds]} hundred" + (f" {spell(rest)}" if rest else "")
    thousands, rest = divmod(number, 1000)
    return f"{spell(thousands)} thousand" + (f" {spell(rest)}" if rest else "")


def number_forms(value: float, money: bool) -> list[str]:
    """Other ways to write ``value``: in words when it is a whole number, with thousands
    separators, with and without the dollar sign."""
    forms = []
    whole = float(value).is_integer() and 0 <= value < 1_000_000
    if money:
        forms += [f"${value:,.2f}", f"{value:.2f} dollars"]
        if whole:
            forms.append(f"{spell(int(value))} dollars")
        return forms
    if whole:
        forms += [spell(int(value)), f"{int(value):,}"]
    else:
        forms.append(f"{value:,.2f}".rstrip("0").rstrip("."))
    return forms


def date_forms(iso: str) -> list[str]:
    day = date.fromisoformat(iso[:10])
    month = MONTH_NAMES[day.month - 1]
    return [f"{day.day} {month} {day.year}", f"{month[:3]} {day.day}, {day.year}", day.isoformat()]


def clock_forms(hhmm: str) -> list[str]:
    hour, minute = int(hhmm[:2]), int(hhmm[3:5])
    half = "am" if hour < 12 else "pm"
    twelve = hour % 12 or 12
    spoken = f"{twelve} {half}" if minute == 0 else f"{twelve}:{minute:02d} {half}"
    forms = [spoken, f"{hour:02d}:{minute:02d}"]
    if (hour, minute) == (12, 0):
        forms.append("noon")
    return forms


def shifted_moment(value: str, kind: str) -> str:
    """A nearby moment of the same kind: the next day, or an hour later."""
    if kind == "time":
        hour, minute = int(value[:2]), int(value[3:5])
        return f"{(hour + 1) % 24:02d}:{minute:02d}"
    if kind == "date":
        return (date.fromisoformat(value[:10]) + timedelta(days=1)).isoformat()
    moment = datetime.fromisoformat(value) + timedelta(days=1)
    return moment.isoformat()
