#!/bin/sh
# trainagent against a scripted fake controller; see test_agent_mock.py.
# BUILD (exported by tests/run.sh) names the build directory.
exec /usr/bin/python3 "$(dirname "$0")/test_agent_mock.py"
