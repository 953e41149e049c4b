"""Benchmarks: `make bench` (all), `make bench BENCH_ARGS="api_latency --backend postgresql"`.

They print figures and assert nothing about time. Each module `bench/bench_<name>.py` has an
`async def run(ctx: BenchContext) -> None`.
"""
