# Sourced before each sh/console block of the docs (tests/docs/test_docs_blocks.py).
# Two kinds of command are not run as written, and say so on stderr:
# - `python3 -m pip install -e .[EXTRAS]`: the suite runs in the installed checkout; the
#   spec is checked (this checkout, extras that pyproject.toml declares), nothing installed;
# - `python3 -m server [SETTINGS]` (a server that runs until stopped): started on a free
#   port (and, without REDIS_URL, its own data folder), stopped with SIGTERM once it
#   answers /healthz; the block fails when it does not start or does not stop cleanly.
# And `curl` fails on an HTTP error status (it prints the body, exit 22), so a request the
# server refuses fails its block (curl -s alone exits 0 on any answer).
set -eo pipefail

curl() { command curl --fail-with-body "$@"; }

_doc_python() {
    if [[ "$1" == -m && "$2" == pip && "$3" == install ]]; then
        "$DOC_PYTHON" "$DOC_HELPERS/doc_commands.py" install "${@:4}"
    elif [[ "$1" == -m && "$2" == server && ( $# -eq 2 || "$3" == --* ) \
            && "$3" != --help && "$3" != -h ]]; then
        "$DOC_PYTHON" "$DOC_HELPERS/doc_commands.py" serve "${@:3}"
    else
        "$DOC_PYTHON" "$@"
    fi
}
python3() { _doc_python "$@"; }
python() { _doc_python "$@"; }
