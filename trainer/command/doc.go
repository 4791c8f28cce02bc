// Package command is the command trainer: it runs the user's own training program on the
// instance with its place in the plan in SCHOONER_* environment variables and the checkpoint
// agent's socket, and follows its progress through lines it prints.
//
// The protocol the program speaks (docs/trainers.md has the reference):
//
//   - it reads its assignment from the environment (Environment lists the variables;
//     SCHOONER_PLAN_JSON holds the whole assignment as JSON);
//   - it checkpoints and restores through the agent on SCHOONER_CKPT_SOCKET (the Python client
//     is trainer/python/schooner_ckpt), restoring SCHOONER_RESTORE_STEP when it is not -1;
//   - it prints, on stdout, one line per iteration or so:
//     SCHOONER_PROGRESS {"iteration":N,"last_checkpoint":S}
//     (other lines go to the node's log);
//   - it exits 0 once it trained SCHOONER_ITERATIONS iterations with the final checkpoint
//     durable; any other exit is a failure.
//
// On cancellation the whole process group gets SIGTERM, then SIGKILL after a grace period, so
// a program that forks data loaders does not leave them behind.
package command
