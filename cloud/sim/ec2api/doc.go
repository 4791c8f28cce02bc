// Package ec2api puts an EC2 face on a simulated (or fake) cloud: an http.Handler that speaks
// the EC2 Query protocol for the handful of actions schooner uses, plus the instance metadata
// service (IMDSv2) that a node agent polls for spot notices. Pointing aws-sdk-go-v2 at it
// (BaseEndpoint) runs schooner's real AWS code path, SDK serialisation, retries and error
// classification included, against the simulation instead of an account.
//
// # EC2 actions
//
// RunInstances, DescribeInstances, TerminateInstances and DescribeSpotPriceHistory, with the
// request parameters schooner sends (see each handler). Replies are the XML documents EC2
// returns, in the 2016-11-15 namespace; errors are EC2's <Response><Errors> document with the
// HTTP status EC2 uses for that code (400 for client errors, 500 for capacity shortages, 503
// for RequestLimitExceeded). The backend's typed errors become real EC2 codes (errors.go), so
// the client classifies exactly what it would classify against AWS.
//
// # Regions
//
// EC2 endpoints are regional; this server is one endpoint for all of them. It scopes each
// request to the region named in the SigV4 credential scope of its Authorization header (the
// region the client was built for), so one client per region sees only its region's
// instances and prices, as against AWS. Unsigned requests see every region.
//
// # Instance metadata
//
// One server simulates the metadata service of many instances, so the instance is named in the
// path: /imds/<instance-id>/latest/... answers as instance <instance-id> would answer
// /latest/... . The SDK's imds client does not keep a path in its endpoint (its serializer
// overwrites the URL path after resolving the endpoint), so cloud/aws's watcher puts the
// prefix back with a middleware; curl works with the full path. Server.IMDSEndpoint builds the
// endpoint for an instance.
package ec2api
