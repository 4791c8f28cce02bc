// Package gceapi is the simulator's Compute Engine face: an http.Handler that answers the
// subset of the Compute Engine v1 REST API that schooner's cloud/gcp adapter uses, so the
// real cloud.google.com/go/compute REST clients (pointed here with option.WithEndpoint and
// option.WithoutAuthentication) drive a simulated market unchanged.
//
// Served under /compute/v1/projects/{project}/zones/{zone}/:
//
//	POST   instances                  insert (one VM per call, as GCE does)
//	GET    instances/{name}           get
//	DELETE instances/{name}           delete
//	GET    instances                  list (filter, maxResults, pageToken)
//	GET    operations/{name}          zoneOperations.get (what Operation.Wait polls)
//	GET    operations                 zoneOperations.list (filter, maxResults, pageToken)
//
// Requests and replies are the protojson encoding of the computepb messages, the same
// encoding the client library uses, so field names, enum spellings and 64-bit integers as
// strings match what the client expects without a hand-kept schema.
//
// # Names
//
// A VM's GCE name is the backend's instance id. Insert requires a valid name, as GCE does,
// but the backend chooses the id, so the VM is created under the backend id and the insert
// operation's targetLink and targetId say which name it got. Clients that read the created
// VM's name from the operation (cloud/gcp does) work against GCE and the simulator alike;
// keeping the backend id as the name also keeps it equal to the id under which the
// simulator boots the VM's node agent. The numeric id is a stable hash of the name.
//
// # Failures
//
// Synchronous errors use the Google JSON error format. Capacity and quota failures are
// reported the way GCE reports them: insert succeeds, and its operation finishes DONE with
// error.errors[].code ZONE_RESOURCE_POOL_EXHAUSTED (or QUOTA_EXCEEDED) and an
// httpErrorStatusCode, which makes Operation.Wait return an error while the operation keeps
// the structured code. Throttling is HTTP 429 rateLimitExceeded; missing resources 404
// notFound; bad input 400 invalid.
//
// # Preemption
//
// A preempted spot VM is TERMINATED when its instanceTerminationAction is STOP (GCE's
// default) and gone (404) when it is DELETE; either way a zone operation of type
// compute.instances.preempted targets it, built from the backend's event log.
//
// # Metadata server
//
// One server stands in for the metadata servers of many VMs, so the VM is chosen by a path
// prefix: GET /vm/{name}/computeMetadata/v1/instance/preempted (header Metadata-Flavor:
// Google) answers for VM {name}. A client on the VM reaches it by rewriting requests for
// http://169.254.169.254/computeMetadata/v1/... to Server.MetadataURL(name) + the same path;
// cloud/gcp's metadata watcher does exactly that when given a metadata URL.
package gceapi
