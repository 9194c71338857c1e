package metrics

// kind is how ZooKeeper's PrometheusMetricsProvider exports a metric.
type kind int

const (
	counter            kind = iota // Counter: a Prometheus counter
	counterSet                     // CounterSet: a counter with a "key" label
	summaryBasic                   // Summary, DetailLevel.BASIC: a summary with the 0.5 quantile
	summaryAdvanced                // Summary, DetailLevel.ADVANCED: the 0.5, 0.9 and 0.99 quantiles
	summarySetBasic                // SummarySet, BASIC: as summaryBasic, with a "key" label
	summarySetAdvanced             // SummarySet, ADVANCED: as summaryAdvanced, with a "key" label
	gaugeSet                       // GaugeSet: a gauge with a "key" label
)

// zookeeperMetrics are the counters, summaries and sets ZooKeeper 3.8's
// ServerMetrics registers on every server whatever its role, and the
// gauge sets ZooKeeperServer registers, in ServerMetrics' order. The
// plain gauges depend on the role and come from Values.
//
// Collie observes those of them it has the machinery for (the constants
// below name them and say what Collie measures); the others stay at zero
// observations, which is true of Collie: it has no prep, sync or commit
// processor queues, no response cache, no JVM pauses.
var zookeeperMetrics = []struct {
	name string
	kind kind
}{
	{FsyncTime, summaryBasic},
	{SnapshotTime, summaryBasic},
	{DBInitTime, summaryBasic},
	{ReadLatency, summaryAdvanced},
	{UpdateLatency, summaryAdvanced},
	{PropagationLatency, summaryAdvanced},
	{FollowerSyncTime, summaryBasic},
	{ObserverSyncTime, summaryBasic},
	{ElectionTime, summaryBasic},
	{LookingCount, counter},
	{DiffCount, counter},
	{SnapCount, counter},
	{CommitCount, counter},
	{ConnectionRequestCount, counter},
	{"connection_token_deficit", summaryBasic},
	{ConnectionRejected, counter},
	{"inflight_snap_count", summaryBasic},
	{"inflight_diff_count", summaryBasic},
	{WritePerNamespace, summarySetBasic},
	{ReadPerNamespace, summarySetBasic},
	{BytesReceivedCount, counter},
	{"unrecoverable_error_count", counter},
	{NodeCreatedWatchCount, summaryBasic},
	{NodeDeletedWatchCount, summaryBasic},
	{NodeChangedWatchCount, summaryBasic},
	{NodeChildrenWatchCount, summaryBasic},
	{"add_dead_watcher_stall_time", counter},
	{"dead_watchers_queued", counter},
	{"dead_watchers_cleared", counter},
	{"dead_watchers_cleaner_latency", summaryAdvanced},
	{"response_packet_cache_hits", counter},
	{"response_packet_cache_misses", counter},
	{"response_packet_get_children_cache_hits", counter},
	{"response_packet_get_children_cache_misses", counter},
	{EnsembleAuthSuccess, counter},
	{EnsembleAuthFail, counter},
	{EnsembleAuthSkip, counter},
	{"prep_processor_queue_time_ms", summaryAdvanced},
	{"prep_processor_queue_size", summaryBasic},
	{"prep_processor_request_queued", counter},
	{"outstanding_changes_queued", counter},
	{"outstanding_changes_removed", counter},
	{"prep_process_time", summaryBasic},
	{"proposal_process_time", summaryBasic},
	{"close_session_prep_time", summaryAdvanced},
	{"revalidate_count", counter},
	{"connection_drop_count", counter},
	{"connection_revalidate_count", counter},
	{"sessionless_connections_expired", counter},
	{StaleSessionsExpired, counter},
	{UnavailableTime, summaryBasic},
	{LeaderUnavailableTime, summaryBasic},
	{"requests_in_session_queue", summaryBasic},
	{"pending_session_queue_size", summaryBasic},
	{"reads_after_write_in_session_queue", summaryBasic},
	{"reads_issued_from_session_queue", summaryBasic},
	{"session_queues_drained", summaryBasic},
	{"time_waiting_empty_pool_in_commit_processor_read_ms", summaryBasic},
	{"write_batch_time_in_commit_processor", summaryBasic},
	{"concurrent_request_processing_in_commit_processor", summaryBasic},
	{"read_commit_proc_req_queued", summaryBasic},
	{"write_commit_proc_req_queued", summaryBasic},
	{"commit_commit_proc_req_queued", summaryBasic},
	{"request_commit_queued", counter},
	{"read_commit_proc_issued", summaryBasic},
	{"write_commit_proc_issued", summaryBasic},
	{"throttled_ops", counter},
	{"read_commitproc_time_ms", summaryAdvanced},
	{"write_commitproc_time_ms", summaryAdvanced},
	{"local_write_committed_time_ms", summaryAdvanced},
	{"server_write_committed_time_ms", summaryAdvanced},
	{"commit_process_time", summaryBasic},
	{"om_proposal_process_time_ms", summaryAdvanced},
	{"om_commit_process_time_ms", summaryAdvanced},
	{"read_final_proc_time_ms", summaryAdvanced},
	{"write_final_proc_time_ms", summaryAdvanced},
	{ProposalLatency, summaryAdvanced},
	{"proposal_ack_creation_latency", summaryAdvanced},
	{"commit_propagation_latency", summaryAdvanced},
	{LearnerProposalReceivedCount, counter},
	{LearnerCommitReceivedCount, counter},
	{"learner_handler_qp_size", summarySetBasic},
	{"learner_handler_qp_time_ms", summarySetAdvanced},
	{StartupTxnsLoaded, summaryBasic},
	{StartupTxnsLoadTime, summaryBasic},
	{StartupSnapLoadTime, summaryBasic},
	{"sync_processor_queue_and_flush_time_ms", summaryAdvanced},
	{"sync_processor_queue_size", summaryBasic},
	{"sync_processor_request_queued", counter},
	{"sync_processor_queue_time_ms", summaryAdvanced},
	{"sync_processor_queue_flush_time_ms", summaryAdvanced},
	{"sync_process_time", summaryBasic},
	{SyncProcessorBatchSize, summaryBasic},
	{"quorum_ack_latency", summaryAdvanced},
	{"ack_latency", summarySetAdvanced},
	{ProposalCount, counter},
	{"quit_leading_due_to_disloyal_voter", counter},
	{"stale_requests", counter},
	{"stale_requests_dropped", counter},
	{"stale_replies", counter},
	{"request_throttle_queue_time_ms", summaryAdvanced},
	{"request_throttle_wait_count", counter},
	{LargeRequestsRejected, counter},
	{"netty_queued_buffer_capacity", summaryBasic},
	{"digest_mismatches_count", counter},
	{"learner_request_processor_queue_size", summaryBasic},
	{UnsuccessfulHandshake, counter},
	{"insecure_admin_count", counter},
	{"tls_handshake_exceeded", counter},
	{"cnxn_closed_without_zk_server_running", counter},
	{"skip_learner_request_to_next_processor_count", counter},
	{"socket_closing_time", summaryBasic},
	{"requests_not_forwarded_to_commit_processor", counter},
	{ResponseBytes, counter},
	{WatchBytes, counter},
	{"jvm_pause_time_ms", summaryAdvanced},
	{QuotaExceededErrorPerNamespace, counterSet},
	{QuotaCountLimitPerNamespace, gaugeSet},
	{QuotaBytesLimitPerNamespace, gaugeSet},
	{QuotaCountUsagePerNamespace, gaugeSet},
	{QuotaBytesUsagePerNamespace, gaugeSet},
}

// The ZooKeeper metrics Collie observes or reads, by their ZooKeeper
// names, with what Collie measures for each.
const (
	FsyncTime                      = "fsynctime"                       // ms per WAL append and its fsync
	SnapshotTime                   = "snapshottime"                    // ms per snapshot written
	DBInitTime                     = "dbinittime"                      // ms to load snapshot and log at the start
	ReadLatency                    = "readlatency"                     // ms from a read's arrival to its reply
	UpdateLatency                  = "updatelatency"                   // ms from a write's arrival to its reply
	PropagationLatency             = "propagation_latency"             // ms from a write's proposal to its apply on this server
	FollowerSyncTime               = "follower_sync_time"              // ms a follower took to load a snapshot it was sent
	ObserverSyncTime               = "observer_sync_time"              // the same for an observer
	ElectionTime                   = "election_time"                   // ms without a leader, until one was known
	LookingCount                   = "looking_count"                   // times this server lost its leader
	DiffCount                      = "diff_count"                      // always 0: raft sends entries, not ZooKeeper's DIFF
	SnapCount                      = "snap_count"                      // snapshots this leader sent to members
	CommitCount                    = "commit_count"                    // entries committed while this server led
	ConnectionRequestCount         = "connection_request_count"        // connect requests: new sessions and reconnections
	ConnectionRejected             = "connection_rejected"             // client connections refused by maxClientCnxns
	WritePerNamespace              = "write_per_namespace"             // bytes written, by top-level znode
	ReadPerNamespace               = "read_per_namespace"              // bytes read, by top-level znode
	BytesReceivedCount             = "bytes_received_count"            // bytes of client requests
	NodeCreatedWatchCount          = "node_created_watch_count"        // watches one NodeCreated event fired
	NodeDeletedWatchCount          = "node_deleted_watch_count"        // ... NodeDeleted
	NodeChangedWatchCount          = "node_changed_watch_count"        // ... NodeDataChanged
	NodeChildrenWatchCount         = "node_children_watch_count"       // ... NodeChildrenChanged
	EnsembleAuthSuccess            = "ensemble_auth_success"           // servers authenticated (quorum SASL)
	EnsembleAuthFail               = "ensemble_auth_fail"              // servers refused (quorum SASL)
	EnsembleAuthSkip               = "ensemble_auth_skip"              // servers taken without authenticating
	StaleSessionsExpired           = "stale_sessions_expired"          // sessions expired by this leader
	UnavailableTime                = "unavailable_time"                // ms an ensemble member knew no leader
	LeaderUnavailableTime          = "leader_unavailable_time"         // the same, when it became leader itself
	ProposalLatency                = "proposal_latency"                // ms from proposal to apply, on the server that proposed
	LearnerProposalReceivedCount   = "learner_proposal_received_count" // entries a follower or observer received
	LearnerCommitReceivedCount     = "learner_commit_received_count"   // entries a follower or observer applied
	StartupTxnsLoaded              = "startup_txns_loaded"             // log entries replayed at the start
	StartupTxnsLoadTime            = "startup_txns_load_time"          // ms of the start but the snapshot's load
	StartupSnapLoadTime            = "startup_snap_load_time"          // ms to load the snapshot
	SyncProcessorBatchSize         = "sync_processor_batch_size"       // entries per WAL append
	ProposalCount                  = "proposal_count"                  // entries this leader appended
	LargeRequestsRejected          = "large_requests_rejected"         // always 0: largeRequestThreshold is not implemented
	UnsuccessfulHandshake          = "unsuccessful_handshake"          // TLS handshakes that failed
	ResponseBytes                  = "response_bytes"                  // bytes of replies to clients
	WatchBytes                     = "watch_bytes"                     // bytes of watch events to clients
	QuotaExceededErrorPerNamespace = "quota_exceeded_error_per_namespace"
	QuotaCountLimitPerNamespace    = "quota_count_limit_per_namespace"
	QuotaBytesLimitPerNamespace    = "quota_bytes_limit_per_namespace"
	QuotaCountUsagePerNamespace    = "quota_count_usage_per_namespace"
	QuotaBytesUsagePerNamespace    = "quota_bytes_usage_per_namespace"
)
