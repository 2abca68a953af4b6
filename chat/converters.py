"""The URL converter for database ids."""

from django.urls import register_converter

MAX_ID = 2**63 - 1  # the largest id or sequence a database column holds


def parse_id(text: str | None) -> int | None:
    """The id `text` names, or None: ASCII digits only ("²" is a digit to str.isdigit but
    not to int) and no larger than a column holds."""
    if not text or not text.isascii() or not text.isdigit() or len(text) > 19:
        return None
    number = int(text)
    return number if number <= MAX_ID else None


class IdConverter:
    """Digits naming a row: a number no column can hold is no page (404). Django's `int`
    converter let 9223372036854775808 through to a query, which raised OverflowError (a 500)
    wherever the lookup was a foreign key's."""

    regex = "[0-9]{1,20}"

    def to_python(self, value: str) -> int:
        number = parse_id(value)
        if number is None:
            raise ValueError("not an id a column can hold")
        return number

    def to_url(self, value: int) -> str:
        return str(value)


register_converter(IdConverter, "id")
