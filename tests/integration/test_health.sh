#!/bin/sh
# The tree keeps the shape docs/architecture.md describes: small functions
# and files, no include circles in controller/, agent/ headers per module,
# folders importing down only (scripts/health.py says which rule and where).
exec /usr/bin/python3 "$(dirname "$0")/../../scripts/health.py" --tap
