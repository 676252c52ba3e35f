#!/usr/bin/env bash
# The todo view state (examples/todo/hub.yml): a view subscribes to
# `viewState`, sends inputs (one of them bad, refused at the door), and a
# second screen joins late.
#
#   examples/todo/run.sh                              # starts its own broker
#   HUB_URL=ws://127.0.0.1:7420/ examples/todo/run.sh # or uses yours (hubcli serve --config examples/todo/hub.yml)
source "$(dirname "$0")/../lib.sh"
start_broker "$EXAMPLES_DIR/todo/hub.yml"

step "the view subscribes to viewState: the current state comes at once"
subscribe_bg "$WORK_DIR/view" viewState
next_value "$WORK_DIR/view" view

step "the view appears: stateRequested"
hub send input '{"type": "stateRequested"}'
next_value "$WORK_DIR/view" view

step "add two todos"
hub send input '{"type": "todoAdded", "title": "Buy milk"}'
next_value "$WORK_DIR/view" view
hub send input '{"type": "todoAdded", "title": "Walk the dog"}'
next_value "$WORK_DIR/view" view

step "remove todo 1"
hub send input '{"type": "todoRemoved", "id": "1"}'
next_value "$WORK_DIR/view" view

step "a bad input is refused at the door (the input subject's schema); the list survives"
refused refused send input 5
hub send input '{"type": "todoAdded", "title": "Call mum"}'
next_value "$WORK_DIR/view" view

step "a second screen opens: it gets the current state at once"
latest late viewState
