// Package policy holds the spot decisions of a training job as policies that can be compared:
// schooner's deadline-aware policy, SkyPilot's FAILOVER and EAGER_NEXT_REGION, Can't Be
// Late's uniform-progress rule, all-spot and all-on-demand. A policy sees what a controller
// sees at each step of a spot-availability trace (the capacity it could launch now, what it
// holds, the progress, the deadline) and says what to hold next.
//
// Simulate replays a trace directory (SkyPilot's spot-traces format) with the planner's
// throughput model and per-second billing, without Temporal and without wall-clock pacing, so
// a run takes milliseconds and the cost of a run never depends on the host's load. Eval runs
// every policy over many start times and deadlines; `schooner policy eval --trace DIR` and
// bench/policy print its table.
//
// What the simulator leaves out (the full stack in cloud/sim and the TrainingJob workflow has
// it): capacity changes only at the trace's ticks; preemption notices are not used for an
// emergency checkpoint, so a preempted run loses the iterations since its last periodic
// checkpoint; spot prices are the catalog's typical ones, fixed; a change of the held
// machines pauses training for one fixed restart time (boot, restore, replan) whatever changed.
package policy
