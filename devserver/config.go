package devserver

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

const clusterName = "active"

// DefaultTaskQueueIdle is how long the matching service keeps a task queue nobody polls
// loaded (Temporal's default is five minutes). It stays above the long-poll expiry (one
// minute), so a queue with a poller waiting is never unloaded under it.
const DefaultTaskQueueIdle = 90 * time.Second

// DefaultTaskWorkers is how many workers each of the history service's task queues
// (transfer, timer, visibility) gets in the embedded server; Temporal's default is 512, sized
// for a host with hundreds of shards (see serverOptions).
const DefaultTaskWorkers = 16

// stores are the server's persistence: the default store (histories, tasks, namespaces) and
// the visibility store (workflow lists), by their names in DataStores.
type stores struct {
	data                          map[string]config.DataStore
	defaultStore, visibilityStore string
}

// sqliteStores is one SQLite database for both stores.
func sqliteStores(opts Options, dbFile string) (stores, error) {
	conf, err := sqliteConfig(opts, dbFile)
	if err != nil {
		return stores{}, err
	}
	return stores{data: map[string]config.DataStore{"sqlite": {SQL: conf}}, defaultStore: "sqlite", visibilityStore: "sqlite"}, nil
}

// chooseStores returns how each start attempt gets its stores, and where they keep the
// state, said for people (the password hidden). PostgreSQL's databases are prepared here,
// once: they outlive an attempt that lost a port. SQLite's are prepared per attempt, as
// before (an in-memory database is named afresh for each).
func chooseStores(opts Options, pg *postgresDB, dbFile string, logger serverLogger) (func() (stores, error), string, error) {
	if pg != nil {
		st, err := postgresStores(pg, opts, logger)
		if err != nil {
			return nil, "", err
		}
		return func() (stores, error) { return st, nil },
			fmt.Sprintf("PostgreSQL %s (visibility in %s)", pg.redacted, pg.VisibilityName()), nil
	}
	storage := "SQLite in memory"
	if dbFile != "" {
		storage = "SQLite " + dbFile
	}
	return func() (stores, error) { return sqliteStores(opts, dbFile) }, storage, nil
}

// buildConfig is the configuration of a single-host cluster: every service in this
// process, each on its own loopback port, one history shard, the given stores.
// taken holds the ports already picked (the user's, the HTTP API's): the services' ports are
// picked apart from them and added.
func buildConfig(opts Options, httpPort int, st stores, taken map[int]bool) (*config.Config, map[primitives.ServiceName]static.Hosts, error) {
	frontend := net.JoinHostPort(opts.IP, strconv.Itoa(opts.Port))
	var conf config.Config
	conf.Global.Membership.MaxJoinDuration = 30 * time.Second
	conf.Global.Membership.BroadcastAddress = opts.IP
	conf.Persistence.DefaultStore = st.defaultStore
	conf.Persistence.VisibilityStore = st.visibilityStore
	conf.Persistence.NumHistoryShards = 1
	conf.Persistence.DataStores = st.data
	conf.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {
				Enabled:                true,
				InitialFailoverVersion: 1,
				RPCAddress:             frontend,
				HTTPAddress:            net.JoinHostPort(opts.IP, strconv.Itoa(httpPort)),
				ClusterID:              "5c4f0b1e-7d2a-4c1e-9b8f-3a6d2e1f0c9a", // fixed: one dev cluster per data directory
			},
		},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	conf.PublicClient.HostPort = frontend

	conf.Services = map[string]config.Service{}
	hosts := map[primitives.ServiceName]static.Hosts{}
	for _, name := range []primitives.ServiceName{primitives.FrontendService, primitives.HistoryService, primitives.MatchingService, primitives.WorkerService} {
		svc := config.Service{}
		svc.RPC.BindOnIP = opts.IP
		if name == primitives.FrontendService {
			svc.RPC.GRPCPort = opts.Port
			svc.RPC.HTTPPort = httpPort
		} else {
			port, err := FreePortExcept(opts.IP, taken)
			if err != nil {
				return nil, nil, err
			}
			svc.RPC.GRPCPort = port
		}
		conf.Services[string(name)] = svc
		hosts[name] = static.SingleLocalHost(net.JoinHostPort(opts.IP, strconv.Itoa(svc.RPC.GRPCPort)))
	}
	return &conf, hosts, nil
}

// sqliteConfig prepares the database: in memory for tests, or a file that is created with
// its schema on first use and reused afterwards, so workflows survive a restart.
func sqliteConfig(opts Options, dbFile string) (*config.SQL, error) {
	conf := &config.SQL{PluginName: sqliteplugin.PluginName}
	if dbFile == "" {
		conf.ConnectAttributes = map[string]string{"mode": "memory", "cache": "shared"}
		conf.DatabaseName = fmt.Sprintf("schooner-%d", time.Now().UnixNano())
	} else {
		// WAL keeps readers (visibility queries from the UI) from blocking writers.
		conf.ConnectAttributes = map[string]string{"mode": "rwc", "journal_mode": "wal", "busy_timeout": "10000"}
		conf.DatabaseName = dbFile
		if _, err := os.Stat(dbFile); os.IsNotExist(err) {
			if err := sqliteschema.SetupSchema(conf); err != nil {
				_ = os.Remove(dbFile)
				return nil, fmt.Errorf("creating Temporal schema in %s: %w", filepath.Dir(dbFile), err)
			}
		} else if err != nil {
			return nil, fmt.Errorf("reading database file: %w", err)
		}
	}
	if err := createNamespace(opts, conf); err != nil {
		return nil, err
	}
	return conf, nil
}

// createNamespace writes opts.Namespace into the default store before the server starts, so
// the first client finds it. Temporal's helper lives in its SQLite schema package but goes
// through the generic SQL persistence, so it serves PostgreSQL as well; it leaves an
// existing namespace alone.
func createNamespace(opts Options, conf *config.SQL) error {
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, opts.Namespace, false, nil)
	if err != nil {
		return fmt.Errorf("preparing namespace %s: %w", opts.Namespace, err)
	}
	if err := sqliteschema.CreateNamespaces(conf, ns); err != nil {
		return fmt.Errorf("creating namespace %s: %w", opts.Namespace, err)
	}
	return nil
}

// namespaceRefresh is how often the services reread namespaces (their search attributes
// among them); stack.Start waits this long after registering attributes.
const namespaceRefresh = time.Second

// NamespaceRefresh is how long after a namespace change (search attributes added) every
// service of the embedded server sees it.
const NamespaceRefresh = 2 * namespaceRefresh

func serverOptions(conf *config.Config, hosts map[primitives.ServiceName]static.Hosts, logger serverLogger, opts Options, httpPort int) []temporal.ServerOption {
	authorizer, _ := authorization.GetAuthorizerFromConfig(&conf.Global.Authorization)
	claimMapper, _ := authorization.GetClaimMapperFromConfig(&conf.Global.Authorization, logger)
	dyn := dynamicconfig.StaticClient{
		// Let the UI and `temporal workflow list` poll freely on a dev box.
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key():                 8192,
		// The history cache keeps workflows' mutable state, closed jobs' too, for an hour;
		// bound it by bytes rather than by entries, so a dev box that ran thousands of jobs
		// holds at most this much of it.
		dynamicconfig.HistoryCacheSizeBasedLimit.Key():        true,
		dynamicconfig.HistoryCacheHostLevelMaxSizeBytes.Key(): 64 << 20,
		// And let an idle dev box give that memory back: an entry unused for two minutes is
		// dropped (a running job touches its own at every event), instead of after an hour.
		dynamicconfig.HistoryCacheTTL.Key(): 2 * time.Minute,
		// The TTL alone drops an entry only when something touches it again, and timer tasks
		// that fire after a workflow closed (its activities' timeouts) load its state where
		// nothing touches it again: the soak's idle process kept ~10 MiB more live heap after
		// every 200 jobs (bench/soak -rounds). A background sweep drops expired entries.
		dynamicconfig.HistoryCacheBackgroundEvict.Key(): dynamicconfig.CacheBackgroundEvictSettings{
			Enabled: true, LoopInterval: 30 * time.Second, MaxEntryPerCall: 1024},
		// The cross-cluster replication cache (8 MiB by default) serves no purpose on one
		// cluster; in the soak's heap it held the most objects of all.
		dynamicconfig.XDCCacheMaxSizeBytes.Key(): 1 << 20,
		dynamicconfig.EventsCacheTTL.Key():       2 * time.Minute,
		// Search attributes registered at start must be usable by the first workflow task:
		// with the default ten-second namespace refresh, a job started right after
		// `schooner dev` came up failed its first task ("no mapping defined for search
		// attribute") and waited ten seconds for the retry.
		dynamicconfig.NamespaceCacheRefreshInterval.Key():           namespaceRefresh,
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): true,
		// One host serves every task queue, so partitions buy nothing, and they cost: each
		// partition of each queue is loaded with its own goroutines, timers and backlog
		// readers, and the non-root ones long-poll the root for user data. Every simulated
		// instance has its own node queue, so with the default four partitions a few hundred
		// jobs left thousands of goroutines behind in the matching service.
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():  1,
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): 1,
		// A node queue is never polled again once its instance is gone: unload it sooner.
		dynamicconfig.MatchingMaxTaskQueueIdleTime.Key(): opts.TaskQueueIdle,
		// The history service's task workers are sized for a production host that owns
		// hundreds of shards (go.temporal.io/server's common/dynamicconfig/constants.go): 512
		// long-lived goroutines for each of the transfer, timer and visibility queues'
		// schedulers, 64 for in-memory timers, and 512 + 128 for the replication streams from
		// other clusters. This server has one host and one shard, on SQLite or PostgreSQL
		// alike, no other cluster to replicate from, and at most a few dozen workflows with
		// tasks pending at once; the idle `schooner dev` kept 2,240 of these goroutines, whose
		// stacks had doubled under load. With these values the soak's idle process kept 12 MiB
		// less of stacks and its jobs took no more CPU (BENCHMARKS.md). A task waits for a
		// worker only while all of them are busy.
		dynamicconfig.TransferProcessorSchedulerWorkerCount.Key():               opts.TaskWorkers,
		dynamicconfig.TimerProcessorSchedulerWorkerCount.Key():                  opts.TaskWorkers,
		dynamicconfig.VisibilityProcessorSchedulerWorkerCount.Key():             opts.TaskWorkers,
		dynamicconfig.MemoryTimerProcessorSchedulerWorkerCount.Key():            max(opts.TaskWorkers/4, 1),
		dynamicconfig.ReplicationProcessorSchedulerWorkerCount.Key():            1,
		dynamicconfig.ReplicationLowPriorityProcessorSchedulerWorkerCount.Key(): 1,
		dynamicconfig.MakeKey("component.nexusoperations.callback.endpoint.template"): fmt.Sprintf(
			"http://%s/namespaces/{{.NamespaceName}}/nexus/callback", net.JoinHostPort(opts.IP, strconv.Itoa(httpPort))),
	}
	return []temporal.ServerOption{
		temporal.WithConfig(conf),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(hosts),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dyn),
		temporal.WithChainedFrontendGrpcInterceptors(finishAbandonedWrites),
	}
}
