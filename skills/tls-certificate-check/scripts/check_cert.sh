#!/usr/bin/env bash
# Check the TLS certificate a server presents.
# Usage: check_cert.sh HOST [PORT] [WARN_DAYS]
# Exit status: 0 ok, 1 expires within WARN_DAYS or chain does not verify, 2 usage or connection error.
set -Eeuo pipefail

host="${1:-}"
port="${2:-443}"
warn_days="${3:-21}"

if [[ -z "$host" ]]; then
    echo "usage: $0 HOST [PORT] [WARN_DAYS]" >&2
    exit 2
fi
command -v openssl >/dev/null 2>&1 || { echo "openssl is required" >&2; exit 2; }

tmp="$(mktemp)"
trap 'rm -f -- "$tmp"' EXIT

if ! timeout 15 openssl s_client -connect "$host:$port" -servername "$host" -showcerts \
        </dev/null >"$tmp" 2>/dev/null; then
    if ! grep -q 'BEGIN CERTIFICATE' "$tmp"; then
        echo "cannot connect to $host:$port or no certificate received" >&2
        exit 2
    fi
fi

leaf="$(sed -n '/BEGIN CERTIFICATE/,/END CERTIFICATE/{p;/END CERTIFICATE/q}' "$tmp")"
chain_count="$(grep -c 'BEGIN CERTIFICATE' "$tmp")"
verify="$(grep -m1 'Verify return code' "$tmp" | sed 's/^ *//')"

echo "host:      $host:$port"
openssl x509 -noout -subject -issuer <<<"$leaf"
echo "SANs:      $(openssl x509 -noout -ext subjectAltName <<<"$leaf" 2>/dev/null | tail -n +2 | sed 's/^ *//')"
not_after="$(openssl x509 -noout -enddate <<<"$leaf" | cut -d= -f2)"
echo "notBefore: $(openssl x509 -noout -startdate <<<"$leaf" | cut -d= -f2)"
echo "notAfter:  $not_after"

now_epoch="$(date -u +%s)"
end_epoch="$(date -u -d "$not_after" +%s 2>/dev/null || date -u -j -f '%b %e %T %Y %Z' "$not_after" +%s)"
days_left=$(( (end_epoch - now_epoch) / 86400 ))
echo "days left: $days_left"
echo "chain:     $chain_count certificate(s) sent"
echo "verify:    ${verify:-unknown}"

status=0
if (( days_left < warn_days )); then
    echo "WARNING certificate expires in $days_left days (threshold $warn_days)" >&2
    status=1
fi
if [[ "$verify" != *"0 (ok)"* ]]; then
    echo "WARNING chain does not verify; check intermediates and the trust store" >&2
    status=1
fi
if (( chain_count < 2 )); then
    echo "NOTE only the leaf certificate was sent; most public CAs need an intermediate" >&2
fi
exit "$status"
