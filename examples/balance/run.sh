#!/usr/bin/env bash
# The balance component (examples/balance/hub.yml): a view subscribes to
# `balanceView`; the backend updates the balance; the view refreshes, goes to
# the background and comes back.
#
#   examples/balance/run.sh                              # starts its own broker
#   HUB_URL=ws://127.0.0.1:7420/ examples/balance/run.sh # or uses yours (hubcli serve --config examples/balance/hub.yml)
source "$(dirname "$0")/../lib.sh"
start_broker "$EXAMPLES_DIR/balance/hub.yml"

refresh() {
    hub trigger refresh
}

step "the view subscribes to balanceView (nothing until the first refresh)"
subscribe_bg "$WORK_DIR/view" balanceView
wait_for_subscribers pipelines balanceView 1

step "the backend reports 1234.5 dollars; nothing shows until a refresh"
hub send account 1234.5
step "refresh"
refresh
next_value "$WORK_DIR/view" view

step "the app goes to the background: active false"
hub send active false
next_value "$WORK_DIR/view" view

step "the balance changes to 98765432.1 and the view refreshes while inactive"
hub send account 98765432.1
refresh
next_value "$WORK_DIR/view" view

step "the app comes back: active true"
hub send active true
next_value "$WORK_DIR/view" view

step "another screen opens: it shows the last refreshed balance at once"
latest other balanceView
