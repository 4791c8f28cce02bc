// micro: the interference study's microbenchmarks (issue 17, item 1). Each benchmark is one
// kernel that leans on one unit of the GPU: the block scheduler, L1, L2 (a footprint sweep),
// DRAM bandwidth, integer instruction issue, the FP32, FP64 and tensor pipes. micro runs each
// alone, each pair back to back on one stream, and each pair colocated on two streams, and
// prints one JSON object per measurement: rates are medians of --repeats runs after a warm-up.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o micro gpu/interference/micro/micro.cu
//   ./micro [--ms 200] [--repeats 5] [--only fp32,dram] [--no-pairs] [--no-sweep]
//
// Sizing: every kernel's grid is 4 blocks of 256 threads per SM (half of an H100/H200 SM's
// 2048 threads), so two kernels can be resident together and colocation measures sharing, not
// the block scheduler queueing one behind the other. A launch is calibrated to about 1 ms.
// Colocated: A's launches on one stream and B's on another, interleaved by the host for --ms;
// each side's rate is its work over the span its own launches took. "slowdown" is a side's
// rate alone over its rate colocated.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <mma.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(x)                                                                                \
	do {                                                                                        \
		cudaError_t e_ = (x);                                                                   \
		if (e_ != cudaSuccess) {                                                                \
			fprintf(stderr, "micro: %s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__); \
			exit(1);                                                                            \
		}                                                                                       \
	} while (0)

constexpr int kThreads = 256;
constexpr int kBlocksPerSM = 4;

// Every kernel folds what it computed into sink[] only when it equals `never` (a value the
// host picks so that it never does): the compiler must compute it, nothing is written.
__global__ void k_blocks(int *sink, int never) {
	if (threadIdx.x == 0 && blockIdx.x == (unsigned)never) sink[0] = 1;
}

__global__ void k_fp32(float *sink, int iters, float never) {
	float a = threadIdx.x * 1e-3f, b = a + 1, c = a + 2, d = a + 3, e = a + 4, f = a + 5, g = a + 6, h = a + 7;
	const float m = 0.9999f, k = 1e-4f;
	for (int i = 0; i < iters; i++) {
		a = fmaf(a, m, k); b = fmaf(b, m, k); c = fmaf(c, m, k); d = fmaf(d, m, k);
		e = fmaf(e, m, k); f = fmaf(f, m, k); g = fmaf(g, m, k); h = fmaf(h, m, k);
	}
	float s = a + b + c + d + e + f + g + h;
	if (s == never) sink[0] = s;
}

__global__ void k_fp64(double *sink, int iters, double never) {
	double a = threadIdx.x * 1e-3, b = a + 1, c = a + 2, d = a + 3;
	const double m = 0.9999, k = 1e-4;
	for (int i = 0; i < iters; i++) {
		a = fma(a, m, k); b = fma(b, m, k); c = fma(c, m, k); d = fma(d, m, k);
	}
	double s = a + b + c + d;
	if (s == never) sink[0] = s;
}

__global__ void k_issue(unsigned *sink, int iters, unsigned never) {
	unsigned a = threadIdx.x, b = a ^ 0x9e3779b9u, c = a * 3u, d = a + 7u, e = a ^ 0x85ebca6bu, f = a * 5u,
	         g = a + 11u, h = a ^ 0xc2b2ae35u;
	for (int i = 0; i < iters; i++) {
		a = a * 1664525u + 1013904223u; b = b * 1664525u + 1013904223u;
		c = c * 1664525u + 1013904223u; d = d * 1664525u + 1013904223u;
		e = e * 1664525u + 1013904223u; f = f * 1664525u + 1013904223u;
		g = g * 1664525u + 1013904223u; h = h * 1664525u + 1013904223u;
	}
	unsigned s = a ^ b ^ c ^ d ^ e ^ f ^ g ^ h;
	if (s == never) sink[0] = s;
}

// Each block reads its own 16 KiB slice again and again: it stays in L1.
__global__ void k_l1(const float4 *buf, float *sink, int iters, float never) {
	const float4 *mine = buf + blockIdx.x * (16384 / 16);
	float4 acc = make_float4(0, 0, 0, 0);
	for (int i = 0; i < iters; i++) {
		float4 v = __ldg(mine + ((threadIdx.x + i * 37) & (16384 / 16 - 1)));
		acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
	}
	float s = acc.x + acc.y + acc.z + acc.w;
	if (s == never) sink[0] = s;
}

// Reads n float4s of buf, grid-stride, passes times: a footprint of n * 16 bytes.
__global__ void k_read(const float4 *buf, size_t n, float *sink, int passes, float never) {
	float4 acc = make_float4(0, 0, 0, 0);
	size_t stride = (size_t)gridDim.x * blockDim.x;
	for (int p = 0; p < passes; p++)
		for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride) {
			float4 v = __ldcg(&buf[i]);  // cached in L2 only: through L1 the L2 sweep measured L1
			acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
		}
	float s = acc.x + acc.y + acc.z + acc.w;
	if (s == never) sink[0] = s;
}

// Two independent chains of bf16 16x16x16 tensor-core products per warp, from registers. Every
// element of both accumulators reaches the sink: when only one element did, the compiler dropped
// the products of the rest as dead code (half the HMMA instructions of a 16x16x16 product), and
// the first H100 run read 1127 TFLOP/s, above the pipe's peak.
__global__ void k_tensor(float *sink, int iters, float never) {
	using namespace nvcuda;
	wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
	wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b0, b1;
	wmma::fragment<wmma::accumulator, 16, 16, 16, float> c0, c1;
	wmma::fill_fragment(a, __float2bfloat16(0.001f));
	wmma::fill_fragment(b0, __float2bfloat16(0.002f));
	wmma::fill_fragment(b1, __float2bfloat16(0.003f));
	wmma::fill_fragment(c0, 0.0f);
	wmma::fill_fragment(c1, 0.0f);
	for (int i = 0; i < iters; i++) {
		wmma::mma_sync(c0, a, b0, c0);
		wmma::mma_sync(c1, a, b1, c1);
	}
	float s = 0;
	for (int e = 0; e < c0.num_elements; e++)
		s += c0.x[e] + c1.x[e];
	if (s == never) sink[0] = s;
}

struct Device {
	int sms = 0;
	size_t l2 = 0;
	float4 *big = nullptr;   // DRAM and L2 sweep buffer
	size_t bigN = 0;         // float4s in it
	float4 *l1buf = nullptr; // 16 KiB per block
	void *sink = nullptr;
};

// A benchmark: one launch of `iters` (calibrated) on a stream, and the work it does.
struct Bench {
	std::string name, unit;
	double scale;  // unit per (iters * grid * threads) item
	size_t footprint = 0;  // k_read: bytes read per pass (0: not a read)
	int iters = 1;
	void launch(const Device &dv, cudaStream_t s) const;
	double work() const;  // one launch's work, in the unit's numerator (a rate is work per second)
};

static int grid(const Device &dv) { return dv.sms * kBlocksPerSM; }

void Bench::launch(const Device &dv, cudaStream_t s) const {
	int g = grid(dv);
	if (name == "blocks") {
		k_blocks<<<iters, 32, 0, s>>>((int *)dv.sink, -1);
	} else if (name == "fp32") {
		k_fp32<<<g, kThreads, 0, s>>>((float *)dv.sink, iters, -1.0f);
	} else if (name == "fp64") {
		k_fp64<<<g, kThreads, 0, s>>>((double *)dv.sink, iters, -1.0);
	} else if (name == "issue") {
		k_issue<<<g, kThreads, 0, s>>>((unsigned *)dv.sink, iters, 0xdeadbeefu);
	} else if (name == "l1") {
		k_l1<<<g, kThreads, 0, s>>>(dv.l1buf, (float *)dv.sink, iters, -1.0f);
	} else if (name == "tensor") {
		k_tensor<<<g, kThreads, 0, s>>>((float *)dv.sink, iters, -1.0f);
	} else {  // dram, l2-*: reads of footprint bytes, iters passes
		k_read<<<g, kThreads, 0, s>>>(dv.big, footprint / 16, (float *)dv.sink, iters, -1.0f);
	}
}

// Work of one launch in the unit's numerator (GB, TFLOP, Gop, Mblocks).
double Bench::work() const {
	return scale * (double)iters;
}

static Bench make(const Device &dv, const std::string &name) {
	double items = (double)grid(dv) * kThreads;
	Bench b;
	b.name = name;
	if (name == "blocks") {
		b.unit = "Mblocks/s", b.scale = 1e-6;
	} else if (name == "fp32") {
		b.unit = "TFLOP/s", b.scale = items * 8 * 2 / 1e12;
	} else if (name == "fp64") {
		b.unit = "TFLOP/s", b.scale = items * 4 * 2 / 1e12;
	} else if (name == "issue") {
		b.unit = "Gop/s", b.scale = items * 8 * 2 / 1e9;  // a multiply-add counted as two
	} else if (name == "l1") {
		b.unit = "GB/s", b.scale = items * 16 / 1e9;
	} else if (name == "tensor") {
		b.unit = "TFLOP/s", b.scale = (items / 32) * 2 * 2.0 * 16 * 16 * 16 / 1e12;
	} else if (name == "dram") {
		b.unit = "GB/s", b.footprint = dv.bigN * 16, b.scale = (double)b.footprint / 1e9;
	} else if (name.rfind("l2-", 0) == 0) {
		size_t mib = strtoull(name.c_str() + 3, nullptr, 10);
		b.unit = "GB/s", b.footprint = std::min(mib << 20, dv.bigN * 16), b.scale = (double)b.footprint / 1e9;
	} else {
		fprintf(stderr, "micro: no benchmark %s\n", name.c_str());
		exit(2);
	}
	return b;
}

static double ms_of(const Device &dv, const Bench &b, cudaStream_t s) {
	cudaEvent_t e0, e1;
	CHECK(cudaEventCreate(&e0));
	CHECK(cudaEventCreate(&e1));
	CHECK(cudaEventRecord(e0, s));
	b.launch(dv, s);
	CHECK(cudaEventRecord(e1, s));
	CHECK(cudaEventSynchronize(e1));
	CHECK(cudaGetLastError());
	float ms = 0;
	CHECK(cudaEventElapsedTime(&ms, e0, e1));
	CHECK(cudaEventDestroy(e0));
	CHECK(cudaEventDestroy(e1));
	return ms;
}

// Sets iters so that one launch takes about target_ms.
static void calibrate(const Device &dv, Bench &b, cudaStream_t s, double target_ms) {
	b.iters = b.name == "blocks" ? 4096 : b.footprint ? 1 : 16;
	for (int round = 0; round < 20; round++) {
		double ms = ms_of(dv, b, s);
		if (ms >= target_ms * 0.8) break;
		double grow = ms > 0.01 ? target_ms / ms : 16;
		long next = (long)(b.iters * std::min(grow, 16.0)) + 1;
		b.iters = (int)std::min(next, 1L << 30);  // also within a grid's 2^31 - 1 blocks
	}
}

static double median(std::vector<double> v) {
	std::sort(v.begin(), v.end());
	size_t n = v.size();
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

using Clock = std::chrono::steady_clock;

// Runs launches of a (and b, when given) for ms milliseconds: a on sa, b on sb (the same
// stream for back to back). Each launch is timed by its own pair of events, so a side's rate is
// its work over the time its own kernels took: on one stream that leaves the other side's
// kernels out, on two it includes what sharing the GPU cost them.
struct Timed {
	std::vector<cudaEvent_t> ev;  // start, end, start, end, ...
	void record(cudaStream_t s) {
		cudaEvent_t e;
		CHECK(cudaEventCreate(&e));
		CHECK(cudaEventRecord(e, s));
		ev.push_back(e);
	}
	double seconds() {
		double t = 0;
		for (size_t k = 0; k + 1 < ev.size(); k += 2) {
			float ms = 0;
			CHECK(cudaEventElapsedTime(&ms, ev[k], ev[k + 1]));
			t += ms / 1e3;
		}
		for (auto e : ev) CHECK(cudaEventDestroy(e));
		ev.clear();
		return t;
	}
};

static void run(const Device &dv, const Bench &a, const Bench *b, cudaStream_t sa, cudaStream_t sb, double ms,
                double *ra, double *rb) {
	Timed ta, tb;
	long na = 0, nb = 0;
	auto end = Clock::now() + std::chrono::microseconds((long)(ms * 1000));
	while (Clock::now() < end) {
		ta.record(sa), a.launch(dv, sa), ta.record(sa), na++;
		if (b) tb.record(sb), b->launch(dv, sb), tb.record(sb), nb++;
		// keep the queues short: the host waits every few launches
		if (na % 4 == 0) CHECK(cudaDeviceSynchronize());
	}
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaGetLastError());
	*ra = a.work() * na / ta.seconds();
	if (b) *rb = b->work() * nb / tb.seconds();
}

// A benchmark alone: a warm-up of a quarter of ms, then the median rate of repeats runs of ms.
static double alone_rate(const Device &dv, const Bench &b, cudaStream_t s, double ms, int repeats) {
	double r, unused;
	run(dv, b, nullptr, s, s, ms / 4, &r, &unused);
	std::vector<double> rs;
	for (int k = 0; k < repeats; k++) {
		run(dv, b, nullptr, s, s, ms, &r, &unused);
		rs.push_back(r);
	}
	return median(rs);
}

int main(int argc, char **argv) {
	double ms = 200;
	int repeats = 5;
	bool pairs = true, sweep = true;
	std::vector<std::string> names = {"blocks", "fp32", "fp64", "issue", "l1", "tensor", "dram"};
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if (a == "--ms" && i + 1 < argc) ms = atof(argv[++i]);
		else if (a == "--repeats" && i + 1 < argc) repeats = atoi(argv[++i]);
		else if (a == "--no-pairs") pairs = false;
		else if (a == "--no-sweep") sweep = false;
		else if (a == "--only" && i + 1 < argc) {
			names.clear();
			std::string list = argv[++i];
			for (size_t p = 0; p <= list.size();) {
				size_t q = list.find(',', p);
				if (q == std::string::npos) q = list.size();
				if (q > p) names.push_back(list.substr(p, q - p));
				p = q + 1;
			}
		} else {
			fprintf(stderr, "usage: micro [--ms 200] [--repeats 5] [--only fp32,dram,...] [--no-pairs] [--no-sweep]\n");
			return 2;
		}
	}
	if (ms <= 0 || repeats < 1) {
		fprintf(stderr, "micro: --ms and --repeats must be positive\n");
		return 2;
	}
	Device dv;
	cudaDeviceProp p;
	CHECK(cudaGetDeviceProperties(&p, 0));
	dv.sms = p.multiProcessorCount;
	dv.l2 = p.l2CacheSize;
	dv.bigN = ((size_t)1 << 30) / 16;  // 1 GiB: far past any L2
	CHECK(cudaMalloc(&dv.big, dv.bigN * 16));
	CHECK(cudaMemset(dv.big, 0, dv.bigN * 16));
	CHECK(cudaMalloc(&dv.l1buf, (size_t)grid(dv) * 16384));
	CHECK(cudaMemset(dv.l1buf, 0, (size_t)grid(dv) * 16384));
	CHECK(cudaMalloc(&dv.sink, 64));
	int drv = 0, rt = 0;
	CHECK(cudaDriverGetVersion(&drv));
	CHECK(cudaRuntimeGetVersion(&rt));
	printf("{\"device\":\"%s\",\"sms\":%d,\"l2_bytes\":%zu,\"cc\":\"%d.%d\",\"driver\":%d,\"runtime\":%d,"
	       "\"blocks_per_sm\":%d,\"threads\":%d,\"ms\":%g,\"repeats\":%d}\n",
	       p.name, dv.sms, dv.l2, p.major, p.minor, drv, rt, kBlocksPerSM, kThreads, ms, repeats);
	fflush(stdout);

	cudaStream_t s1, s2;
	CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
	std::vector<Bench> benches;
	for (auto &n : names) {
		Bench b = make(dv, n);
		calibrate(dv, b, s1, 1.0);
		benches.push_back(b);
	}
	std::vector<double> alone(benches.size());
	for (size_t i = 0; i < benches.size(); i++) {
		const Bench &b = benches[i];
		alone[i] = alone_rate(dv, b, s1, ms, repeats);
		printf("{\"mode\":\"alone\",\"bench\":\"%s\",\"rate\":%.4g,\"unit\":\"%s\",\"iters\":%d,\"ms_per_launch\":%.4g}\n",
		       b.name.c_str(), alone[i], b.unit.c_str(), b.iters, ms_of(dv, b, s1));
		fflush(stdout);
	}
	if (sweep) {
		// The L2 footprint sweep: read rate against how much is read, alone.
		for (size_t mib = 1; mib <= 512; mib *= 2) {
			Bench b = make(dv, "l2-" + std::to_string(mib));
			calibrate(dv, b, s1, 1.0);
			printf("{\"mode\":\"l2-sweep\",\"footprint_mib\":%zu,\"rate\":%.4g,\"unit\":\"GB/s\",\"l2_mib\":%.1f}\n", mib,
			       alone_rate(dv, b, s1, ms, repeats), dv.l2 / 1048576.0);
			fflush(stdout);
		}
	}
	if (pairs) {
		for (size_t i = 0; i < benches.size(); i++)
			for (size_t j = i; j < benches.size(); j++) {
				for (int colocated = 0; colocated < 2; colocated++) {
					std::vector<double> ra, rb;
					cudaStream_t sb = colocated ? s2 : s1;
					double x, y;
					run(dv, benches[i], &benches[j], s1, sb, ms / 4, &x, &y);
					for (int k = 0; k < repeats; k++) {
						run(dv, benches[i], &benches[j], s1, sb, ms, &x, &y);
						ra.push_back(x), rb.push_back(y);
					}
					double ma = median(ra), mb = median(rb);
					printf("{\"mode\":\"%s\",\"a\":\"%s\",\"b\":\"%s\",\"rate_a\":%.4g,\"rate_b\":%.4g,"
					       "\"slowdown_a\":%.4g,\"slowdown_b\":%.4g}\n",
					       colocated ? "colocated" : "back-to-back", benches[i].name.c_str(), benches[j].name.c_str(), ma,
					       mb, alone[i] / ma, alone[j] / mb);
					fflush(stdout);
				}
			}
	}
	return 0;
}
