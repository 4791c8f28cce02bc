// Package jobwf is the workflow code a TrainingJob (trainingwf) and a ServingDeployment
// (servingwf) share: both hold spot instances bought through the Fleet child, pay for them
// by the hour, release them at the end and keep the same search attributes current. Having
// one copy keeps the two workflows' command sequences alike where their logic is alike, so a
// fix to one (an option, a summary, a cleanup step) is not forgotten in the other.
//
// Everything here is deterministic workflow code: it only calls the workflow package, and
// each helper issues its commands in the order its callers did before, so the committed
// replay histories still replay.
package jobwf
