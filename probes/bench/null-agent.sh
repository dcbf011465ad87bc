#!/bin/sh
# A control for alternating.py: started and stopped like `redoctor probe`,
# printing one JSON line a second, but attaching nothing. Its on/off figure
# is the bench's own bias; it should read ~100%:
#   AGENTS="null=probes/bench/null-agent.sh,agent=target/release/redoctor" \
#     probes/bench/alternating.py 4 30
trap 'kill $! 2>/dev/null; exit 0' TERM INT
while :; do
	echo '{"null_agent":true}'
	sleep 1 &
	wait $!
done
