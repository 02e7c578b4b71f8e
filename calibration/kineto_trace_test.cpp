#include "calibration/kineto_trace.hpp"

#include <catch2/catch.hpp>

#include "sim/input_error.hpp"
#include "tests/source_file.hpp"

using namespace fabricsim;
using namespace fabricsim::calibration;

namespace {

KinetoTrace parse(const char* text) {
  return read_kineto_trace(sim::parse_json_text(text, "trace.json").root());
}

}  // namespace

TEST_CASE("kernel classes from kernel names", "[trace]") {
  CHECK(classify_kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*)") ==
        KernelClass::communication);
  // DeepEP's kernels, as its public build and DeepSeek's own profiles name them.
  CHECK(classify_kernel("void deep_ep::internode::dispatch<false, 8, false, 24>(int4*, float*)") ==
        KernelClass::communication);
  CHECK(classify_kernel("void deep_ep::internode_ll::combine<7168>(void*, void*)") ==
        KernelClass::communication);
  CHECK(classify_kernel("void dpsk::ep::internode::combine<false, 8, __nv_bfloat16, 8, 2, 16, "
                        "24>(int4*, float*, bool const*)") == KernelClass::communication);
  CHECK(classify_kernel("void dpsk::ep::internode::cached_notify<false>(int, int, int)") ==
        KernelClass::communication);
  // DeepGEMM's grouped GEMMs are GEMMs, though "grouped" and "ep" appear in other kernels.
  CHECK(classify_kernel("void cutlass::device_kernel<dpsk::grouped_gemm::cuda::m_grouped_fp8_"
                        "ptp128c::GemmKernel>(dpsk::grouped_gemm::cuda::m_grouped_fp8_ptp128c)") ==
        KernelClass::gemm);
  CHECK(classify_kernel("void flash_fwd_kernel<Flash_fwd_kernel_traits<128>>") ==
        KernelClass::attention);
  CHECK(classify_kernel("cudnn_generated_fort_native_sdpa_sm90_flash_fprop") ==
        KernelClass::attention);
  CHECK(classify_kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64") ==
        KernelClass::gemm);
  CHECK(classify_kernel("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN") == KernelClass::gemm);
  CHECK(classify_kernel("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_32x6_nn>") ==
        KernelClass::gemm);
  CHECK(classify_kernel("void cudnn::winograd_nonfused::winogradForwardData4x4<float>") ==
        KernelClass::gemm);
  CHECK(classify_kernel("void at::native::vectorized_elementwise_kernel<4, at::native::Add>") ==
        KernelClass::memory);
  CHECK(classify_kernel("void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor>") ==
        KernelClass::memory);
}

TEST_CASE("a trace's kernel time per class, per step, and GPU busy time", "[trace]") {
  const KinetoTrace t = parse(R"({
    "deviceProperties": [{"name": "NVIDIA H100 80GB HBM3"}],
    "traceEvents": [
      {"cat": "user_annotation", "name": "ProfilerStep#7", "ts": 0, "dur": 1000},
      {"cat": "user_annotation", "name": "ProfilerStep#8", "ts": 1000, "dur": 1000},
      {"cat": "cpu_op", "name": "aten::mm", "ts": 5, "dur": 10},
      {"cat": "kernel", "name": "sm90_xmma_gemm_bf16", "ts": 100, "dur": 300},
      {"cat": "kernel", "name": "flash_fwd_kernel", "ts": 400, "dur": 100},
      {"cat": "kernel", "name": "ncclDevKernel_AllReduce", "ts": 450, "dur": 200},
      {"cat": "gpu_memcpy", "name": "Memcpy DtoD", "ts": 900, "dur": 100},
      {"cat": "kernel", "name": "elementwise_kernel", "ts": 1100, "dur": 100}
    ]})");
  CHECK(t.gpu_name == "NVIDIA H100 80GB HBM3");
  CHECK(t.steps == 2);
  CHECK(t.total.of(KernelClass::gemm) == Approx(300e-6));
  CHECK(t.total.of(KernelClass::attention) == Approx(100e-6));
  CHECK(t.total.of(KernelClass::communication) == Approx(200e-6));
  CHECK(t.total.of(KernelClass::memory) == Approx(200e-6));
  CHECK(t.per_step.of(KernelClass::gemm) == Approx(150e-6));
  CHECK(t.window_s == Approx(1100e-6));
  // Busy: [100, 650] (the all-reduce overlaps attention), [900, 1000], [1100, 1200] = 750 us.
  CHECK(t.gpu_busy == Approx(750.0 / 1100.0));
}

TEST_CASE("a real trace: HolisticTraceAnalysis' A100 training trace", "[trace]") {
  // Expected values summed independently (Python) over tests/data/kineto/hta-a100-rank0.json.
  const KinetoTrace t =
      load_kineto_trace(testing::source_file("tests/data/kineto/hta-a100-rank0.json"));
  CHECK(t.gpu_name == "NVIDIA A100-SXM4-80GB");
  CHECK(t.steps == 5);
  CHECK(t.total.of(KernelClass::gemm) == Approx(0.125118).epsilon(1e-9));
  CHECK(t.total.of(KernelClass::communication) == Approx(0.190345).epsilon(1e-9));
  CHECK(t.total.of(KernelClass::memory) == Approx(0.1343).epsilon(1e-9));
  CHECK(t.total.of(KernelClass::attention) == 0);
  CHECK(t.total.kernels[static_cast<size_t>(KernelClass::gemm)] == 173);
  CHECK(t.total.kernels[static_cast<size_t>(KernelClass::memory)] == 7494);
  CHECK(t.window_s == Approx(1.231461).epsilon(1e-9));
  CHECK(t.gpu_busy == Approx(0.35601939484888273).epsilon(1e-9));
}

TEST_CASE("malformed traces are located errors", "[trace][bad-input]") {
  CHECK_THROWS_WITH(parse(R"({"events": []})"), Catch::Contains("traceEvents"));
  CHECK_THROWS_WITH(parse(R"({"traceEvents": {}})"), Catch::Contains("an array of trace events"));
  CHECK_THROWS_WITH(
      parse(R"({"traceEvents": [{"cat": "cpu_op", "name": "x", "ts": 1, "dur": 1}]})"),
      Catch::Contains("GPU activity"));
  CHECK_THROWS_WITH(parse(R"({"traceEvents": [{"cat": "kernel", "name": "k", "ts": 1}]})"),
                    Catch::Contains("/traceEvents/0"));
  CHECK_THROWS_WITH(
      parse(R"({"traceEvents": [{"cat": "kernel", "name": "k", "ts": 1, "dur": -5}]})"),
      Catch::Contains("non-negative dur"));
  CHECK_THROWS_AS(parse("[1, 2]"), sim::InputError);
}
