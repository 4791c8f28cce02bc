// Package sim is a simulated spot market over the GPU catalog: the cloud schooner runs
// against by default (schooner dev and demo) and the one its tests trust.
//
// A Market implements cloud.Provider (named "sim") for every AWS and GCP offering of a
// catalog. Each (zone, instance type) has a spot capacity that changes over simulated time,
// either replayed from a real availability trace (SkyPilot's spot-traces or Sailor's GPU
// traces) or drawn from a seeded on/off model; spot prices drift in a bounded random walk.
// When capacity falls below what is held, the newest instances get a preemption notice and
// are reclaimed when it runs out, as AWS (2 minutes) and GCP (30 seconds) do.
//
// Time is the market's own. AdvanceTo moves it and carries out everything scheduled up to
// then, in order; nothing happens between calls, so the same seed and the same calls at the
// same simulated times always produce the same event log. Run drives the clock from wall time
// (scaled) for live use. Every method is safe for concurrent use.
package sim
