#!/usr/bin/env bash
# Homepage rows (examples/homepage/hub.yml): the backend feeds topics and
# pages of medias; a view subscribes to `homepage`, loads more of one topic,
# and reloads.
#
#   examples/homepage/run.sh                              # starts its own broker
#   HUB_URL=ws://127.0.0.1:7420/ examples/homepage/run.sh # or uses yours (hubcli serve --config examples/homepage/hub.yml)
source "$(dirname "$0")/../lib.sh"
start_broker "$EXAMPLES_DIR/homepage/hub.yml"

step "the backend publishes the topics and their pages"
hub send topics '["news", "sports"]'
hub send medias '{
  "news":   [[{"id": "n1"}, {"id": "n2"}], [{"id": "n3"}, {"id": "n4"}], [{"id": "n5"}]],
  "sports": [[{"id": "s1"}, {"id": "s2"}], [{"id": "s3"}]]
}'

step "the view subscribes to homepage: every row with its first page"
subscribe_bg "$WORK_DIR/view" homepage
next_value "$WORK_DIR/view" rows

step "load more news (loadMore, key \"news\"): news gets its second page, sports stays"
hub trigger loadMore --key '"news"'
next_value "$WORK_DIR/view" rows

step "load more sports: its last page (hasMore false)"
hub trigger loadMore --key '"sports"'
next_value "$WORK_DIR/view" rows

step "the backend adds a topic and new first pages; nothing changes until a reload"
hub send topics '["music", "news", "sports"]'
hub send medias '{
  "music":  [[{"id": "m1"}]],
  "news":   [[{"id": "n0"}, {"id": "n1"}], [{"id": "n2"}]],
  "sports": [[{"id": "s1"}, {"id": "s2"}], [{"id": "s3"}]]
}'
step "reload: every row from its first page again"
hub trigger reload
next_value "$WORK_DIR/view" rows
