#!/bin/sh
# Every member of CreateTrainingJobRequest has a class (supported, refused,
# no-op) in scripts/training_members.py, and what scripts/gen_model.py
# generates from it and from both botocore models (api/model_gen.c,
# api/members_gen.c, the table in docs/api-compatibility.md) is what is
# committed. Then, on copies: a class taken away, and a member that a newer
# botocore might add, both make the check fail, naming the member. Skipped
# without the newer botocore model (the check would compare against a
# different merge). TAP on stdout.
set -u
. "$(dirname "$0")/../lib.sh"
cd "$T_ROOT" || exit 1
PY=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1

m26=$($PY -c 'import sys; sys.path.insert(0, "scripts"); import gen_model as g; f = g.find_m26(g.M22_DEFAULT); print(f[0] if f else "")' 2>/dev/null)
if [ -z "$m26" ]; then
	t_skip_all "newer botocore (its SageMaker model) not installed"
fi
t_plan 5
t_tmpdir trainctl-members

# 1. The committed files are what the generator makes.
if $PY scripts/gen_model.py --check >"$T_TMP/check.err" 2>&1; then
	t_pass "every member is classified; generated files are up to date"
else
	t_fail "every member is classified; generated files are up to date"
	t_diag_file "$T_TMP/check.err" 40
fi

# A copy of what the generator reads and writes, to break on purpose.
copy_tree() {
	rm -rf "$T_TMP/tree"
	mkdir -p "$T_TMP/tree/scripts" "$T_TMP/tree/api" "$T_TMP/tree/docs"
	cp scripts/gen_model.py scripts/training_members.py "$T_TMP/tree/scripts/"
	cp api/model_gen.c api/members_gen.c "$T_TMP/tree/api/"
	cp docs/api-compatibility.md "$T_TMP/tree/docs/"
}

# 2. A member without a class fails the check, named.
copy_tree
sed -i '/("ResourceConfig.InstanceCount", SUPPORTED, ""),/d' \
	"$T_TMP/tree/scripts/training_members.py"
if $PY "$T_TMP/tree/scripts/gen_model.py" --check >"$T_TMP/c2.err" 2>&1; then
	t_fail "a member without a class fails the check" "the check passed"
elif grep -q "ResourceConfig.InstanceCount has no class" "$T_TMP/c2.err"; then
	t_pass "a member without a class fails the check"
else
	t_fail "a member without a class fails the check"
	t_diag_file "$T_TMP/c2.err"
fi

# 3. A member that a newer model adds fails the check until it is classified.
copy_tree
$PY - "$m26" "$T_TMP/newer.json" <<'EOF'
import gzip, json, sys
src, dst = sys.argv[1], sys.argv[2]
with (gzip.open if src.endswith(".gz") else open)(src, "rt", encoding="utf-8") as f:
    m = json.load(f)
m["shapes"]["ResourceConfig"]["members"]["FutureKnob"] = {"shape": "Boolean"}
with open(dst, "w", encoding="utf-8") as f:
    json.dump(m, f)
EOF
if $PY "$T_TMP/tree/scripts/gen_model.py" --m26 "$T_TMP/newer.json" --check >"$T_TMP/c3.err" 2>&1; then
	t_fail "a member new in the model fails the check" "the check passed"
elif grep -q "ResourceConfig.FutureKnob has no class" "$T_TMP/c3.err"; then
	t_pass "a member new in the model fails the check"
else
	t_fail "a member new in the model fails the check"
	t_diag_file "$T_TMP/c3.err"
fi

# 4. A hand-edited table is caught.
copy_tree
sed -i 's/^| `VpcConfig` | no-op by design |/| `VpcConfig` | supported |/' \
	"$T_TMP/tree/docs/api-compatibility.md"
if $PY "$T_TMP/tree/scripts/gen_model.py" --check >"$T_TMP/c4.err" 2>&1; then
	t_fail "an edited members table fails the check" "the check passed"
elif grep -q "docs/api-compatibility.md is not what" "$T_TMP/c4.err"; then
	t_pass "an edited members table fails the check"
else
	t_fail "an edited members table fails the check"
	t_diag_file "$T_TMP/c4.err"
fi

# 5. Turning a pending member on is one line: everything it holds is
#    classified already, so the generator accepts the change.
copy_tree
for m in DebugHookConfig DebugRuleConfigurations TensorBoardOutputConfig \
	ExperimentConfig ProfilerConfig ProfilerRuleConfigurations; do
	sed -i "/^    \"$m\",\$/d" "$T_TMP/tree/scripts/training_members.py"
done
if ! grep -q '"DebugHookConfig",$' "$T_TMP/tree/scripts/training_members.py" &&
	$PY "$T_TMP/tree/scripts/gen_model.py" >"$T_TMP/c5.err" 2>&1 &&
	grep -q '^| `DebugHookConfig.S3OutputPath` | supported |' "$T_TMP/tree/docs/api-compatibility.md"; then
	t_pass "a pending member turns on by deleting its PENDING line"
else
	t_fail "a pending member turns on by deleting its PENDING line"
	t_diag_file "$T_TMP/c5.err"
fi

t_done
