// Package stage is the node side of a serving deployment's stage, without Temporal: it runs
// the Python inference worker of a serving.StageAssignment (schooner_serve.worker), waits
// until it listens, reports stage-ready to the deployment, keeps the worker's successor
// addresses current (the "peers" op of docs/serving-protocol.md section 2, fed by the
// deployment's stages query), and stops it when its run is cancelled. The RunStage activity
// (activities/servingact.Node) is a thin layer over Supervisor.Run, as
// activities/trainingact.Trainer is over trainer/node.Supervisor.
package stage
