# Helpers shared by the scenario scripts (examples/*/run.sh); sourced, not run.
#
# HUBCLI: the hubcli to use (default: the one on PATH, else .build/debug/hubcli,
#         built if missing).
# HUB_URL: a broker already started with the scenario's hub.yml; without it,
#          the script starts one itself on a free port and stops it at the end.
# When a step fails, the script prints what failed, the failing command's
# error and the end of its broker's log before it removes its temporary files.

set -euo pipefail

EXAMPLES_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PACKAGE_DIR=$(dirname "$EXAMPLES_DIR")
WORK_DIR=$(mktemp -d "${TMPDIR:-/tmp}/hub-scenario.XXXXXX")
BACKGROUND_PIDS=()
declare -A SEEN=()

if [ -z "${HUBCLI:-}" ]; then
    if command -v hubcli >/dev/null 2>&1; then
        HUBCLI=$(command -v hubcli)
    else
        HUBCLI="$PACKAGE_DIR/.build/debug/hubcli"
        if [ ! -x "$HUBCLI" ]; then
            echo "building hubcli…" >&2
            (cd "$PACKAGE_DIR" && swift build --product hubcli >&2)
        fi
    fi
fi

cleanup() {
    local status=$? pid file
    for pid in "${BACKGROUND_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${BACKGROUND_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    if [ "$status" -ne 0 ]; then
        # What the failing step left behind, before it is deleted.
        for file in "$WORK_DIR"/*.err; do
            [ -s "$file" ] || continue
            echo "run.sh: $(basename "$file" .err) said:" >&2
            sed 's/^/  /' "$file" >&2
        done
        if [ -s "$WORK_DIR/broker.log" ]; then
            echo "run.sh: the broker's log ($HUB_URL), last lines:" >&2
            tail -n 20 "$WORK_DIR/broker.log" | sed 's/^/  /' >&2
        fi
    fi
    rm -rf "$WORK_DIR"
    return "$status"
}
trap cleanup EXIT

# fail MESSAGE: print it and stop the script.
fail() {
    echo "run.sh: $*" >&2
    exit 1
}

# hub ARGS...: hubcli against the scenario's broker; on failure, says which step failed.
hub() {
    "$HUBCLI" "$@" --url "$HUB_URL" || fail "hubcli $* failed (status $?)"
}

# refused LABEL ARGS...: hubcli against the broker, which must refuse the request;
# prints the broker's error, labelled.
refused() {
    local label=$1 message
    shift
    if message=$("$HUBCLI" "$@" --url "$HUB_URL" 2>&1); then
        fail "hubcli $* was accepted; the broker should have refused it"
    fi
    printf '%-12s %s\n' "$label" "$message"
}

# latest LABEL NAME: a new subscriber's first value of NAME (a late screen), labelled.
latest() {
    local label=$1 name=$2 value
    value=$("$HUBCLI" subscribe "$name" --count 1 --url "$HUB_URL" 2>"$WORK_DIR/latest.err") \
        || fail "hubcli subscribe $name --count 1 failed"
    printf '%-12s %s\n' "$label" "$value"
}

# start_broker CONFIG: unless HUB_URL is set, serve CONFIG on a free port and set HUB_URL.
start_broker() {
    if [ -n "${HUB_URL:-}" ]; then return; fi
    local log="$WORK_DIR/broker.log" port="" i
    "$HUBCLI" serve --config "$1" --host 127.0.0.1 --port 0 2>"$log" &
    BACKGROUND_PIDS+=($!)
    for i in $(seq 300); do
        port=$(sed -n 's|^hubcli: listening on ws://127.0.0.1:\([0-9]*\)/$|\1|p' "$log")
        [ -n "$port" ] && break
        kill -0 "${BACKGROUND_PIDS[-1]}" 2>/dev/null || { cat "$log" >&2; fail "the broker did not start"; }
        sleep 0.1
    done
    [ -n "$port" ] || fail "the broker did not start within 30 s"
    HUB_URL="ws://127.0.0.1:$port/"
    echo "# broker: $1 on $HUB_URL"
}

# subscribe_bg FILE NAME [OPTIONS...]: subscribe to NAME in the background, one JSON value per line into FILE.
subscribe_bg() {
    local file=$1
    shift
    : >"$file"
    "$HUBCLI" subscribe "$@" --url "$HUB_URL" >"$file" 2>"$file.err" &
    BACKGROUND_PIDS+=($!)
    SEEN[$file]=0
}

# subscribers KIND NAME: the subscriber count of a subject or pipeline (KIND: subjects or pipelines).
subscribers() {
    hub list --json | python3 -c '
import json, sys
catalog = json.load(sys.stdin)
print(next((e["subscribers"] for e in catalog[sys.argv[1]] if e["name"] == sys.argv[2]), 0))' "$1" "$2"
}

# wait_for_subscribers KIND NAME COUNT: poll the catalog until NAME has COUNT subscribers (10 s at most).
wait_for_subscribers() {
    local i
    for i in $(seq 100); do
        [ "$(subscribers "$1" "$2")" -ge "$3" ] && return
        sleep 0.1
    done
    fail "$2 does not have $3 subscribers"
}

# next_value FILE [LABEL]: wait (10 s at most) for the next line of a background subscription and print it.
next_value() {
    local file=$1 label=${2:-$(basename "$1")} want=$((SEEN[$1] + 1)) i
    for i in $(seq 100); do
        if [ "$(wc -l <"$file")" -ge "$want" ]; then
            SEEN[$file]=$want
            printf '%-12s %s\n' "$label" "$(sed -n "${want}p" "$file")"
            return
        fi
        sleep 0.1
    done
    cat "$file.err" >&2
    fail "no value $want from $label within 10 s"
}

# step TEXT: print what the script does next.
step() {
    echo
    echo "> $*"
}
