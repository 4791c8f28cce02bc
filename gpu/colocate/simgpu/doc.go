// Package simgpu is a simulated GPU: a discrete-event model of thread blocks on SMs, on which
// the colocation runtime's admission rule (the C of gpu/colocate, through cgo) and its
// Supervisor are tested in CI without a GPU. Everything it reports is simulated and says so.
//
// The model keeps what decides an HP kernel's wait and leaves out the rest. An SM holds one
// block at a time; a kernel's blocks are dispatched to free SMs, streams in priority order and,
// within a priority, in the order their kernels became eligible; a dispatched block runs to
// its end (priority never preempts, as on the H200); a stream's next kernel becomes eligible
// when the previous one is done; memory-bound blocks of different kernels share the memory
// bandwidth (a block runs slower by the other kernels' share of the running memory-bound
// blocks); block times jitter by ±3% from a seeded source, so a kernel's SMs free up one by one
// and a waiting kernel can slip in, as on the real device. Not modelled: several blocks per SM,
// L2 and issue-rate interference between compute-bound and memory-bound kernels (the
// interference study measures those), MPS, time slices, copies.
package simgpu
