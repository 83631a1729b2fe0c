#!/usr/bin/env bash
# GPU check in one call (issues 4 and 5): device info, `pytest -m gpu`, then the GPU
# benchmark (perf/bench_gpu.py: elementwise, reductions, softmax family, cross_entropy,
# layer_norm vs a device-to-device copy; bf16 matmul 4096^3 vs torch or the published rate).
# Runs from the source tree (PYTHONPATH=., no installs) in about 7 minutes on an H200: the
# benchmarks first with fixed budgets (~4 min at most; bench_gpu's JSON is rewritten after
# every benchmark, so even a killed run leaves results), then the pytest shards until the
# global deadline (DEADLINE_S, default 420), then the > 2^31-element tests alone, then the
# launch-config sweep (perf/sweep_gpu.py) in whatever time is left before SWEEP_END_S.
# Usage: perf/gpu_check.sh OUTDIR
set -u
OUT="${1:?usage: perf/gpu_check.sh OUTDIR}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
cd "$(dirname "$0")/.."
export PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}"
unset TRITON_INTERPRET
export PYTHONUNBUFFERED=1
start=$(date +%s)
DEADLINE_S="${DEADLINE_S:-420}"

echo "== device"
python - <<'PY' 2>&1 | tee "$OUT/device.txt"
import platform, sys
import numpy, triton
import tgrad
c = tgrad.cuda
print(f"python {platform.python_version()} numpy {numpy.__version__} triton {triton.__version__}")
print("cuda available:", c.is_available(), "| interpreted:", c.is_interpreted(),
      "| why not:", c.why_unavailable())
if c.is_available():
    print("devices:", c.device_count(), "|", c.get_device_properties(0))
print("torch imported:", "torch" in sys.modules)
PY

echo "== benchmark (first, on the idle GPU; a fixed share of the deadline, so its numbers
== always come back; the first H200 run's pytest phase left it no time)"
rc=0
timeout 95 python perf/bench_gpu.py --out "$OUT" --budget-s 60 || rc=1

echo "== issue 7: launch overhead, CUDA graphs, op sweep"
timeout 60 python perf/bench_launch.py --device cuda --compare torch --number 500 --profile 2000 \
    --out "$OUT" || rc=1
timeout 40 python perf/bench_graph.py --compare torch --out "$OUT" || rc=1
timeout 45 python -m tgrad bench --device cuda --ops add,mul,exp,tanh,sum,matmul --sizes 1m,16m --reps 30 --no-progress --out "$OUT" || rc=1

echo "== pytest -m gpu (op table sharded over 16 processes, one per CPU core)"
# GPU memory in use, once a second, while the tests run (the first H200 run's module loads
# failed with out of memory; this shows whether the device was really full)
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader,nounits -l 1 \
      > "$OUT/gpu_memory_during_tests.csv" 2>&1 &
  smi_pid=$!
fi
SHARDS=16  # the H200 machine has 16 cores; JIT compilation is the bulk of the time
left=$(( DEADLINE_S - ($(date +%s) - start) ))
[ "$left" -lt 120 ] && left=120
pids=()
prc=0  # the tests' own status (rc also counts the benchmarks)
for i in $(seq 0 $((SHARDS - 1))); do
  if [ "$i" -eq 0 ]; then files="tests"; else files="tests/test_cuda_gpu.py"; fi
  # the > 2^31-element tests run alone afterwards: next to 15 other processes' memory pools
  # they ran out of memory (and made the op table's launches fail) on the first H200 run
  TGRAD_GPU_SHARD="$i/$SHARDS" timeout $(( left - 70 )) python -m pytest -o addopts= -m gpu -q -p no:cacheprovider \
      -rfE -k "not past_2_31" $files > "$OUT/.pytest_gpu_$i.txt" 2>&1 &
  pids+=($!)
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { r=$?; [ "$r" -ne 5 ] && prc=1; }  # 5: nothing collected
done
timeout 60 python -m pytest -o addopts= -m gpu -q -p no:cacheprovider -rfE -k "past_2_31" tests \
    > "$OUT/.pytest_gpu_big.txt" 2>&1 || { r=$?; [ "$r" -ne 5 ] && prc=1; }
[ -n "${smi_pid:-}" ] && kill "$smi_pid" 2>/dev/null
[ -s "$OUT/gpu_memory_during_tests.csv" ] && sort -t, -k1 -n "$OUT/gpu_memory_during_tests.csv" \
    | tail -n 1 | awk -F, '{print "peak GPU memory in use during the tests: " $1 " of " $2 " MiB"}'
for i in $(seq 0 $((SHARDS - 1))) big; do
  echo "---- shard $i/$SHARDS"; tail -n 80 "$OUT/.pytest_gpu_$i.txt"
done > "$OUT/pytest_gpu.txt"
rm -f "$OUT"/.pytest_gpu_*.txt
grep -hE "passed|failed|error" "$OUT/pytest_gpu.txt" | tail -n $(( SHARDS + 1 ))
echo "pytest -m gpu: $([ $prc -eq 0 ] && echo PASSED || echo FAILED) ($(( $(date +%s) - start ))s)"
[ "$prc" -ne 0 ] && rc=1

python - "$OUT/bench_gpu.json" <<'PY' || rc=1
import json, sys
r = json.load(open(sys.argv[1]))
print(f"bench: {r.get('n_meeting_target')}/{r.get('n_scored')} meet target, "
      f"{r.get('n_errors')} errors, copy {r.get('copy_GBps')} GB/s, "
      f"matmul reference: {(r.get('matmul_reference') or {}).get('kind')}")
sys.exit(1 if r.get("error") else 0)
PY
# Launch-config sweep (perf/sweep_gpu.py: candidates for the kernels under target), last
# and only with the time left before SWEEP_END_S (the device tool allows 600 s a call)
left=$(( ${SWEEP_END_S:-560} - ($(date +%s) - start) ))
if [ "$left" -ge 60 ]; then
  echo "== launch-config sweep (${left}s left)"
  timeout $(( left - 10 )) python perf/sweep_gpu.py --out "$OUT/sweep" --reps 30 \
      --budget-s $(( left - 40 )) > "$OUT/sweep_log.txt" 2>&1 || rc=1
  grep -c "^| " "$OUT/sweep/sweep_gpu.md" 2>/dev/null | sed 's/^/sweep rows: /'
fi
echo "gpu_check: total $(( $(date +%s) - start ))s, rc=$rc"
# One archive of everything above: the device tool returns at most 8 files from $OUT, so
# only the archive and the two summaries stay beside it.
tmp=$(mktemp -d) && tar czf "$tmp/gpu_check_results.tgz" -C "$OUT" . \
  && find "$OUT" -mindepth 1 -maxdepth 1 ! -name bench_gpu.md ! -name pytest_gpu.txt \
       -exec rm -rf {} + \
  && mv "$tmp/gpu_check_results.tgz" "$OUT/" && rmdir "$tmp"
exit $rc
