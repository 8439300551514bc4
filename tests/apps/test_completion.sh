#!/usr/bin/env bash
# The bash completion (apps/cli/completion/blockflow.bash) against the built program: commands,
# options, --device values, block ids of the page on the line (--fetch, --feed ID=, explain
# BLOCK), block types (blocks TYPE) and a block's attributes (--set ID.ATTR=).
# usage: test_completion.sh BLOCKFLOW_BINARY
set -u
bin=$1
here=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin"
ln -s "$(realpath "$bin")" "$tmp/bin/blockflow"
PATH="$tmp/bin:$PATH"
cp "$here/examples/filter_grad_same.json" "$tmp/p.json"
cd "$tmp"
compopt() { :; } # outside a real completion
source "$here/apps/cli/completion/blockflow.bash"
fail=0
# expect "WORDS..." "WANTED" : the completions of the last word contain WANTED
expect() {
    local want=$2
    read -ra COMP_WORDS <<<"$1"
    [[ $1 == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMPREPLY=()
    _blockflow
    local got=" ${COMPREPLY[*]} "
    if [[ $got != *" $want "* ]]; then
        echo "FAIL: \"$1\" completes to [${COMPREPLY[*]}], no \"$want\""
        fail=1
    fi
}
expect "blockflow ru" run
expect "blockflow run p.json --wa" --watch
expect "blockflow run p.json --device " cpu
expect "blockflow run p.json --fetch " dw
expect "blockflow run p.json --feed d" dy=
expect "blockflow run p.json --set d" dw.
expect "blockflow run p.json --set dw." dw.padding=
expect "blockflow explain p.json " dw
expect "blockflow blocks Conv2DBackp" Conv2DBackpropFilter
expect "blockflow help " run
expect "blockflow run " p.json
# blocks laid out on one line (no attributes) are found too
printf '{"format":"blockflow.page","version":1,"blocks":[{"id":"ph","type":"Placeholder"},{"id":"idn","type":"Identity","inputs":{"input":"ph"}}]}' >q.json
expect "blockflow run q.json --fetch " ph
expect "blockflow run q.json --fetch " idn
expect "blockflow run q.json --set ph." ph.dtype=
[[ $fail == 0 ]] && echo "bash completion: all cases pass"
exit $fail
