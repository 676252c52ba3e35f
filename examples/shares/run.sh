#!/usr/bin/env bash
# The shares list (examples/shares/hub.yml): a view subscribes to
# `sharesView` while the three feeds send, one after the other.
#
#   examples/shares/run.sh                              # starts its own broker
#   HUB_URL=ws://127.0.0.1:7420/ examples/shares/run.sh # or uses yours (hubcli serve --config examples/shares/hub.yml)
source "$(dirname "$0")/../lib.sh"
start_broker "$EXAMPLES_DIR/shares/hub.yml"

step "the view subscribes to sharesView (nothing yet: no feed has sent)"
subscribe_bg "$WORK_DIR/view" sharesView
wait_for_subscribers pipelines sharesView 1

step "the items arrive: the view shows them at once, downloads and uploads still null"
hub send items '[{"id": "f1", "name": "report.pdf"}, {"id": "f2", "name": "photo.jpg"}]'
next_value "$WORK_DIR/view" view

step "a download starts"
hub send downloads '[{"id": "f1", "progress": 0.5}]'
next_value "$WORK_DIR/view" view

step "an upload starts"
hub send uploads '[{"id": "f2", "progress": 0.25}]'
next_value "$WORK_DIR/view" view

step "the download finishes"
hub send downloads '[]'
next_value "$WORK_DIR/view" view

step "a file is shared"
hub send items '[{"id": "f1", "name": "report.pdf"}, {"id": "f2", "name": "photo.jpg"}, {"id": "f3", "name": "notes.txt"}]'
next_value "$WORK_DIR/view" view
