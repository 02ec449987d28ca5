#!/usr/bin/env bash
# Template for a robust bash script. Copy, rename and fill in main().
set -Eeuo pipefail

readonly SCRIPT_NAME="${0##*/}"
VERBOSE=0
OUTPUT=""

usage() {
    cat <<USAGE
Usage: $SCRIPT_NAME [-v] [-o OUTPUT] INPUT...

Options:
  -o OUTPUT   write results to OUTPUT instead of stdout
  -v          verbose logging to stderr
  -h          show this help
USAGE
}

log() { printf '%s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >&2; }
debug() { if (( VERBOSE )); then log "DEBUG $*"; fi; }
die() { log "ERROR $*"; exit 1; }

TMPDIR_WORK=""
cleanup() {
    local rc=$?
    if [[ -n "$TMPDIR_WORK" && -d "$TMPDIR_WORK" ]]; then
        rm -rf -- "$TMPDIR_WORK"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'die "failed at line $LINENO: $BASH_COMMAND"' ERR

require() {
    local cmd
    for cmd in "$@"; do
        command -v "$cmd" >/dev/null 2>&1 || die "required command not found: $cmd"
    done
}

main() {
    while getopts ':o:vh' opt; do
        case "$opt" in
            o) OUTPUT="$OPTARG" ;;
            v) VERBOSE=1 ;;
            h) usage; exit 0 ;;
            :) usage >&2; die "option -$OPTARG needs an argument" ;;
            *) usage >&2; exit 2 ;;
        esac
    done
    shift $((OPTIND - 1))
    (( $# > 0 )) || { usage >&2; exit 2; }

    require awk sort
    TMPDIR_WORK="$(mktemp -d)"
    debug "working in $TMPDIR_WORK"

    local input
    for input in "$@"; do
        [[ -r "$input" ]] || die "cannot read input: $input"
        debug "processing $input"
        wc -l -- "$input" >>"$TMPDIR_WORK/counts"
    done

    if [[ -n "$OUTPUT" ]]; then
        sort -n -- "$TMPDIR_WORK/counts" >"$OUTPUT"
    else
        sort -n -- "$TMPDIR_WORK/counts"
    fi
}

main "$@"
