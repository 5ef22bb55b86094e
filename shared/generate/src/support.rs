//! support-judge examples (docs/DESIGN.md §2.1): engineering support tickets and a bot's responses.
//!
//! Why: the bundled `examples/support-judge.jsonl` and the 10^6–10^7 benchmark datasets must give
//! judges something real to grade, and their report must show differences between models and
//! prompt versions. Tickets come from 40 templates over real tools (Jenkins, Kubernetes,
//! Postgres, Terraform, Vault, Kafka, nginx…) with slots; each response is drawn from one of five
//! styles whose mix depends on the model and the prompt version (see [`STYLE_WEIGHTS`]).

use super::{fill, obj, pick, rng, weighted};
use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

/// Models of both providers, as the judge-mapping prefix rules see them.
pub(crate) const MODELS: [&str; 5] = [
    "gpt-4o",
    "gpt-4o-mini",
    "o3-mini",
    "claude-sonnet-4-20250514",
    "claude-3-5-haiku-20241022",
];
pub(crate) const PROMPT_VERSIONS: [&str; 3] = ["v1.0", "v1.1", "v2.0"];

/// Response styles, in the column order of [`STYLE_WEIGHTS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Style {
    Good,
    Verbose,
    Vague,
    Informal,
    OffTopic,
}
const STYLES: [Style; 5] = [
    Style::Good,
    Style::Verbose,
    Style::Vague,
    Style::Informal,
    Style::OffTopic,
];

/// Style weights per model under prompt v1.0 (good, verbose, vague, informal, off-topic).
/// Later prompt versions scale every non-good weight by [`VERSION_FACTOR`], so v2.0 beats v1.1
/// beats v1.0 for every model; claude-3-5-haiku is the informal one, o3-mini the verbose one,
/// gpt-4o-mini the vague one.
pub(crate) const STYLE_WEIGHTS: [[f64; 5]; 5] = [
    [62.0, 18.0, 8.0, 6.0, 6.0],
    [50.0, 12.0, 20.0, 8.0, 10.0],
    [55.0, 27.0, 8.0, 4.0, 6.0],
    [66.0, 16.0, 8.0, 5.0, 5.0],
    [45.0, 6.0, 12.0, 28.0, 9.0],
];
pub(crate) const VERSION_FACTOR: [f64; 3] = [1.0, 0.75, 0.4];

struct Template {
    tool: &'static str,
    ticket: &'static str,
    good: &'static str,
}

const fn t(tool: &'static str, ticket: &'static str, good: &'static str) -> Template {
    Template { tool, ticket, good }
}

#[rustfmt::skip]
const TEMPLATES: [Template; 40] = [
    t("Jenkins", "Jenkins pipeline for {svc} failing with OOM error on the build step. Getting 'java.lang.OutOfMemoryError: Java heap space' about {n} minutes into the build.", "The build JVM is running out of heap. Raise it by adding '-Xmx4g' to JAVA_OPTS (or MAVEN_OPTS/GRADLE_OPTS for the build tool) in the {svc} pipeline configuration. If the agent runs in a container, keep its memory limit at least 1 GB above the heap, otherwise the kernel OOM killer stops the build instead."),
    t("Jenkins", "All Jenkins agents in the {env} pool show as offline since this morning; {svc} jobs sit in the queue with 'Waiting for next available executor'.", "Open Manage Jenkins > Nodes and check the offline reason on one agent. Most often the agent JVM lost its connection after a controller restart or the agents' disk fell below the free-space threshold. Reconnect one agent, free space under the workspace directory if needed, and the queued {svc} jobs will start as executors come back."),
    t("Jenkins", "Jenkins job {svc}-deploy fails with 'ERROR: Could not find credentials entry with ID git-deploy-key' after the Jenkins upgrade to {ver}.", "The upgrade changed the credential store scope: the job can no longer see 'git-deploy-key'. Check Manage Jenkins > Credentials and confirm the entry exists in the global domain (or the folder that contains {svc}-deploy), with exactly that ID, then re-run the job."),
    t("Kubernetes", "{svc} pods in the {env} namespace are in CrashLoopBackOff after the last deploy. kubectl logs shows 'Error: connect ECONNREFUSED 10.0.3.17:6379'.", "The pods crash because they cannot reach Redis on port 6379 at startup. Check that the Redis Service in {env} has ready endpoints (kubectl get endpoints) and that the new {svc} deploy points to the Service name instead of a hard-coded pod IP like 10.0.3.17. Adding a startup retry would also stop the CrashLoopBackOff during Redis restarts."),
    t("Kubernetes", "Deployment of {svc} {ver} to {env} is stuck: pods show ImagePullBackOff with 'pull access denied, repository does not exist or may require authorization'.", "The node cannot pull the {svc}:{ver} image. Verify the tag was pushed to the registry, and that the {env} namespace has the registry pull secret referenced in imagePullSecrets of the deployment (or the service account). kubectl describe pod shows the exact image reference being pulled."),
    t("Kubernetes", "{svc} containers keep getting OOMKilled (exit code 137) in {env} under load; the memory limit is 512Mi.", "Exit code 137 with OOMKilled means the container exceeded its 512Mi limit. Compare real usage with kubectl top pod during load, then raise the limit (and the request) to cover the peak, or cap the runtime heap below the limit, e.g. -XX:MaxRAMPercentage=75 for the JVM or --max-old-space-size for Node."),
    t("Kubernetes", "New {svc} pods are stuck in Pending in {env}; kubectl describe says '0/{n} nodes are available: {n} Insufficient cpu'.", "The scheduler cannot find a node with enough unrequested CPU for the pod's CPU request. Either lower the {svc} CPU request to what it really uses, or add capacity: scale the node group or let the cluster autoscaler add nodes. kubectl describe nodes shows allocated requests per node."),
    t("Kubernetes", "Readiness probe failing for {svc} after switching the app to port 8081: 'Readiness probe failed: HTTP probe failed with statuscode: 404'.", "The probe reaches the app but the path returns 404, so the probe path or port no longer matches. Update readinessProbe.httpGet in the {svc} deployment to port 8081 and to the health endpoint the app actually serves (for example /healthz), then roll out again."),
    t("Postgres", "{svc} in {env} throws 'FATAL: sorry, too many clients already' from Postgres during peak traffic.", "Postgres hit max_connections. Put a pooler (PgBouncer in transaction mode) in front of the database or reduce the {svc} pool size per replica so that replicas x pool size stays below max_connections. Check pg_stat_activity for idle connections that are never returned."),
    t("Postgres", "A query on the orders table in the {svc} Postgres database went from 40ms to {n} seconds after yesterday's data migration.", "After a large migration the planner statistics are stale. Run ANALYZE orders (or VACUUM ANALYZE), then compare EXPLAIN ANALYZE before and after. If it still does a sequential scan, check that the migration did not drop the index the query relies on."),
    t("Postgres", "Postgres read replica in {region} is {n} minutes behind the primary; reports served by {svc} show stale data.", "Check pg_stat_replication on the primary and pg_last_xact_replay_timestamp() on the replica to see whether WAL is not shipped or not replayed. Long queries on the replica can block replay; hot_standby_feedback or a lower max_standby_streaming_delay helps. Route {svc} reports to the primary until lag recovers."),
    t("Postgres", "Postgres primary for {svc} in {env} is at 95% disk and WAL files keep piling up in pg_wal.", "WAL usually piles up because a replication slot is inactive. Query pg_replication_slots, drop any inactive slot that is no longer needed, and check that archive_command succeeds. Do not delete files from pg_wal by hand; once the slot is gone Postgres recycles them."),
    t("Postgres", "Can't connect to the {env} database from my local machine. Connection times out after {n} seconds.", "A timeout (not 'connection refused') means the traffic is dropped on the way: the {env} database only accepts connections from the VPN or the bastion. Connect to the VPN, or open an SSH tunnel through the bastion (ssh -L 5432:db.{env}.internal:5432 bastion), and connect to localhost:5432."),
    t("Postgres", "Flyway migration {ver} for {svc} hangs forever in {env}; pg_stat_activity shows it waiting on a lock.", "The migration waits for a lock held by another session, often a long transaction from {svc} itself. Find the blocker with pg_blocking_pids() in pg_stat_activity, end it if safe, and set lock_timeout for migrations so they fail fast instead of hanging."),
    t("Terraform", "terraform apply for the {env} network stack fails with 'Error acquiring the state lock: ConditionalCheckFailedException'.", "Another run holds the state lock, or a crashed run left it behind. Confirm nobody is applying, then release it with terraform force-unlock <LOCK_ID> using the ID printed in the error. Running applies only from CI avoids concurrent locks."),
    t("Terraform", "terraform plan for {svc} in {env} wants to destroy and recreate the RDS instance even though nobody changed the config.", "Look at the attribute marked 'forces replacement' in the plan: usually engine_version after an automatic minor upgrade or a changed snapshot identifier. Align the config with the real value or add that attribute to lifecycle.ignore_changes, and add prevent_destroy to the RDS resource."),
    t("Terraform", "After bumping the AWS provider to {ver}, terraform init fails with 'Failed to query available provider packages'.", "The version constraint cannot be satisfied with the lock file. Run terraform init -upgrade so .terraform.lock.hcl is updated for {ver}, and check the required_providers constraint allows that version and that the CI runner can reach registry.terraform.io."),
    t("Vault", "Vault in {env} is sealed after a node restart and {svc} cannot read its secrets: 'Code: 503. Errors: Vault is sealed'.", "Vault seals itself on restart. Unseal with the required number of key shares (vault operator unseal) or check why auto-unseal via KMS failed in the Vault server logs. {svc} will recover once vault status shows Sealed: false."),
    t("Vault", "{svc} fails at startup with 'permission denied' from Vault when reading secret/data/{svc}/db; it worked until yesterday.", "The token or role most likely expired, or the policy changed. Check vault token lookup for the TTL, then verify the policy attached to the {svc} role still grants read on secret/data/{svc}/db. Renewable tokens should be renewed by the agent sidecar before the TTL ends."),
    t("Vault", "Need to rotate the API keys for {svc}. What's the process?", "To rotate {svc} API keys: 1) generate new keys in the provider dashboard, 2) write them to Vault under secret/{svc}/api-keys, 3) redeploy {svc} so it picks up the new keys, 4) verify requests succeed, 5) revoke the old keys. The runbook is docs/runbooks/key-rotation.md."),
    t("Kafka", "Consumer group for {svc} has lag growing to {n}00k messages on the orders topic in {env}.", "Lag grows when consumers process slower than producers write. Check whether all partitions are assigned (kafka-consumer-groups --describe), scale {svc} consumers up to the partition count, and look for a slow downstream call in the handler. If one partition lags alone, a hot key is skewing the load."),
    t("Kafka", "{svc} consumers keep rebalancing every few minutes; logs show 'consumer poll timeout has expired' and max.poll.interval.ms exceeded.", "A consumer that spends longer than max.poll.interval.ms between polls is kicked out and triggers a rebalance. Lower max.poll.records or raise max.poll.interval.ms, and move slow processing off the poll loop. Cooperative-sticky assignment makes the remaining rebalances cheaper."),
    t("Kafka", "Producer in {svc} fails with 'RecordTooLargeException' when publishing invoice events with attachments.", "The record exceeds the producer max.request.size and the topic max.message.bytes (1 MB by default). Store attachments in object storage and publish a reference, or raise max.request.size, the topic max.message.bytes and the consumer fetch size together."),
    t("nginx", "nginx returns 502 Bad Gateway for /api/{svc} in {env}; error.log shows 'upstream prematurely closed connection while reading response header from upstream'.", "The upstream closed the connection before answering, usually because {svc} crashed or its own timeout is shorter than nginx's. Check the {svc} logs at the same timestamps, and align keepalive_timeout of the app with proxy_read_timeout and upstream keepalive in nginx."),
    t("nginx", "Uploads over 1 MB to {svc} fail with '413 Request Entity Too Large' from nginx.", "nginx limits request bodies to 1 MB by default. Set client_max_body_size (for example 50m) in the server or location block for {svc}, or the ingress annotation nginx.ingress.kubernetes.io/proxy-body-size on Kubernetes, then reload nginx."),
    t("nginx", "Browsers show NET::ERR_CERT_DATE_INVALID for {svc}.{env}.example.com; the certificate on nginx expired.", "Renew the certificate (certbot renew or your CA), update ssl_certificate and ssl_certificate_key for the {svc} server block, and run nginx -t && nginx -s reload. Add an expiry alert so renewals failing silently are caught two weeks ahead."),
    t("Redis", "Redis used by {svc} hits maxmemory and writes fail with 'OOM command not allowed when used memory > maxmemory'.", "With maxmemory-policy noeviction Redis rejects writes when full. If the data is a cache, switch to allkeys-lru and make sure {svc} sets TTLs; otherwise raise maxmemory. redis-cli --bigkeys shows what fills the memory."),
    t("Docker", "CI build for {svc} fails with 'no space left on device' during docker build on the shared runner.", "The runner's Docker storage is full of old layers and build cache. Run docker system prune -af and docker builder prune on the runner, and schedule it; a multi-stage build with a smaller final image for {svc} also reduces what accumulates."),
    t("GitHub Actions", "GitHub Actions workflow for {svc} fails at checkout with 'fatal: could not read Username for https://github.com: terminal prompts disabled'.", "The workflow has no credentials for the repository it clones. Use actions/checkout with a token that can read it (a fine-grained PAT or GitHub App token stored as a secret) when the repository is private or in another organisation; the default GITHUB_TOKEN only covers the current repository."),
    t("Helm", "helm upgrade for {svc} in {env} fails with 'Error: UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress'.", "A previous release operation was interrupted and left the release in pending-upgrade. Check helm history {svc} -n {env}, then roll back to the last deployed revision with helm rollback; the next upgrade will then go through."),
    t("Kubernetes", "{svc} intermittently fails to resolve internal hostnames in {env}: 'getaddrinfo EAI_AGAIN postgres.internal'.", "EAI_AGAIN is a temporary DNS failure, usually CoreDNS being overloaded or conntrack races on UDP. Check the CoreDNS pods' CPU and logs, scale CoreDNS or enable NodeLocal DNSCache, and use a fully qualified name with a trailing dot to avoid search-domain lookups."),
    t("Prometheus", "The HighErrorRate alert for {svc} flaps between firing and resolved every few minutes in {env}.", "The alert expression sits right at the threshold with a short window. Evaluate the error ratio over a longer range (rate over 5m or 10m instead of 1m) and add a 'for: 10m' clause so the alert only fires when the condition holds; Alertmanager grouping reduces the noise further."),
    t("Grafana", "Grafana dashboard for {svc} shows 'No data' for all panels since the Prometheus migration.", "The panels still point at the old data source or the metric labels changed. Check the dashboard's data source variable, then run one panel query in Explore: if the series exist under a new job or instance label, update the dashboard queries accordingly."),
    t("Elasticsearch", "Elasticsearch cluster backing {svc} search is RED; _cluster/health shows {n} unassigned shards.", "RED means at least one primary shard is unassigned. GET _cluster/allocation/explain tells you why: most often a node left or disk watermarks were exceeded. Free disk or bring the node back; replicas then recover and the cluster goes GREEN."),
    t("AWS", "{svc} gets AccessDenied when writing to the S3 bucket {svc}-exports-{env} after we moved it to a new IAM role.", "The new role lacks s3:PutObject on that bucket, or the bucket policy still names the old role. Add s3:PutObject on arn:aws:s3:::{svc}-exports-{env}/* to the role policy, update the bucket policy, and check KMS key permissions if the bucket uses SSE-KMS."),
    t("SSH", "I lost SSH access to the {env} bastion host after my laptop was replaced; 'Permission denied (publickey)'.", "The bastion only trusts your old key. Generate a new key pair (ssh-keygen -t ed25519), add the public key to your profile in the access portal or open an access request, and wait for the key sync; then connect with ssh -i ~/.ssh/id_ed25519."),
    t("Git", "Pushing to the {svc} repo is rejected: 'remote: error: File dump.sql is 142.00 MB; this exceeds GitHub's file size limit of 100.00 MB'.", "The large file is in your local commits, so deleting it now is not enough. Remove it from history with git filter-repo --path dump.sql --invert-paths (or an interactive rebase if it is only in recent commits), add it to .gitignore, and push again."),
    t("Kubernetes", "The nightly Kubernetes CronJob for {svc} reports didn't run last night; no Job was created.", "Check kubectl describe cronjob: if startingDeadlineSeconds is short and the controller missed the slot, the run is skipped, and after 100 missed schedules the CronJob stops scheduling. Also confirm spec.suspend is false and the schedule's time zone matches your expectation."),
    t("API gateway", "Calls from {svc} to the payments API started returning 429 Too Many Requests in {env} since {n} am.", "The payments API is rate limiting {svc}. Check the rate-limit headers in the responses to see the quota, add retries with exponential backoff and jitter honouring Retry-After, and look for a retry loop or traffic increase in {svc} since {n} am."),
    t("Kubernetes", "p99 latency of {svc} jumped from 120ms to {n} seconds after deploying {ver} to {env}; CPU looks normal.", "High latency with normal CPU points to waiting: connection pool exhaustion, a new synchronous downstream call, or lock contention. Compare traces before and after {ver}; if it is clearly the release, roll back first and investigate the diff afterwards."),
];

const SERVICES: [&str; 14] = [
    "payment-service",
    "auth-service",
    "checkout-api",
    "notification-worker",
    "search-indexer",
    "billing-api",
    "user-profile",
    "inventory-sync",
    "order-service",
    "reporting-etl",
    "gateway",
    "ledger",
    "shipping-quotes",
    "recommendation-api",
];
const ENVS: [&str; 4] = ["staging", "production", "dev", "qa"];
const REGIONS: [&str; 4] = ["eu-west-1", "us-east-1", "ap-northeast-2", "us-west-2"];
const VERSIONS: [&str; 6] = ["2.14.1", "3.0.0", "1.8.4", "5.31.0", "2.440.1", "4.2.0-rc1"];
const NUMBERS: [&str; 8] = ["3", "4", "5", "6", "8", "10", "12", "15"];

const OPENERS: [&str; 5] = ["", "", "", "Thanks for the details. ", "Good catch. "];
const CLOSERS: [&str; 4] = [
    "",
    "",
    " Let me know if it persists.",
    " If that does not help, share the full logs.",
];
const VERBOSE_INTRO: [&str; 3] = [
    "Thank you so much for reaching out and for providing such a detailed description of the issue you are experiencing. I completely understand how frustrating it can be when {tool} does not behave as expected, especially when it impacts your team's productivity and your delivery timelines. Let me walk you through a comprehensive set of considerations. ",
    "Great question, and thanks for your patience! Before diving in, it is worth noting that problems like this one with {tool} can have many different root causes, ranging from configuration to infrastructure to application code, so it is important to approach them methodically and step by step. ",
    "I appreciate you raising this. There are quite a few things to consider here, and I want to make sure I cover all of the bases so that you have the full picture before making any changes to {svc} or to {tool} itself. ",
];
const VERBOSE_OUTRO: [&str; 3] = [
    " In addition, it is generally considered a best practice to document any changes you make, to communicate them to your team, and to monitor the system closely afterwards. I hope this helps! Please do not hesitate to reach out if you have any further questions, concerns, or if there is anything else at all that I can assist you with.",
    " As a general note, keeping {tool} and its plugins up to date, reviewing your observability setup, and scheduling regular maintenance windows will help you avoid similar situations in the future. Feel free to get back to me at any time; I am always happy to help with anything else you might need.",
    " Finally, remember that every environment is a little different, so you may need to adapt these steps to your specific setup in {env}. Once again, thank you for your patience and understanding, and have a wonderful rest of your day!",
];
const VAGUE: [&str; 5] = [
    "This could be a {tool} configuration issue. Check the logs and make sure everything is set up correctly, then try again.",
    "It is hard to say without more information. Could you share the full logs for {svc}? It might be related to a recent change.",
    "Have you tried redeploying {svc}? These issues sometimes resolve themselves after a restart.",
    "This looks like an infrastructure problem. Please open a ticket with the platform team so they can take a look at {env}.",
    "{tool} issues like this are usually caused by resource limits or permissions. Review both and it should work.",
];
const INFORMAL_GENERIC: [&str; 4] = [
    "Hey! So like, {tool} is tricky sometimes you know? Have you tried turning it off and on again? Also maybe check if your computer is connected to the internet lol.",
    "lol yeah {tool} does that sometimes. just restart {svc} and see if it goes away? if not idk, maybe ping someone on the platform team haha",
    "ugh {tool} errors are the worst!! 😅 anyway you probably wanna bump the limits or whatever, should be fine",
    "omg same thing happened to me last week 😂 I think I just nuked the {env} stuff and redeployed. worked for me 🤷",
];
const INFORMAL_OPEN: [&str; 3] = [
    "Hey! so basically ",
    "yo, ok so ",
    "haha classic {tool} moment. ",
];
const INFORMAL_CLOSE: [&str; 3] = [
    " lol. lmk if that doesn't work 🙂",
    " ez 👍",
    " and ur good, probably lol",
];
const OFF_TOPIC: [&str; 4] = [
    "Thanks for reaching out! The office will be closed on Friday for the company offsite. For expense reports, please use the new finance portal.",
    "Our onboarding guide covers laptop setup, Slack channels and the vacation policy. You can find it on the intranet under People > New joiners.",
    "We recommend reviewing the quarterly security awareness training before the deadline next week. Completion is tracked by HR.",
    "The cafeteria menu for this week is posted on the wiki. Please remember to book meeting rooms through the calendar tool.",
];

/// Streams `n` support-judge examples `{id, ticket, response, model, prompt_version}`
/// (docs/DESIGN.md §2.1), deterministic for `seed`. Ids are `ticket-000001`, `ticket-000002`, … Every
/// block of 15 consecutive examples covers each (model, prompt version) pair once, in a
/// shuffled order, so any prefix is balanced; the response style mix is [`STYLE_WEIGHTS`].
pub fn support_judge(n: u64, seed: u64) -> impl Iterator<Item = Value> {
    let mut rng = rng(seed);
    let mut block: Vec<usize> = Vec::new();
    (0..n).map(move |i| {
        if block.is_empty() {
            block = (0..MODELS.len() * PROMPT_VERSIONS.len()).collect();
            block.shuffle(&mut rng);
        }
        let combo = block.pop().unwrap_or(0);
        example(
            &mut rng,
            i + 1,
            combo / PROMPT_VERSIONS.len(),
            combo % PROMPT_VERSIONS.len(),
        )
        .0
    })
}

/// One example and the style its response was drawn with (tests check the mix).
fn example(rng: &mut ChaCha8Rng, number: u64, model: usize, version: usize) -> (Value, Style) {
    let template_index = rng.random_range(0..TEMPLATES.len());
    let tpl = &TEMPLATES[template_index];
    let (svc, env, region) = (pick(rng, &SERVICES), pick(rng, &ENVS), pick(rng, &REGIONS));
    let (ver, num) = (pick(rng, &VERSIONS), pick(rng, &NUMBERS));
    let tool = tpl.tool;
    let slot = |name: &str| match name {
        "svc" => Some(svc),
        "env" => Some(env),
        "region" => Some(region),
        "ver" => Some(ver),
        "n" => Some(num),
        "tool" => Some(tool),
        _ => None,
    };
    let mut ticket = String::with_capacity(tpl.ticket.len() + 32);
    fill(&mut ticket, tpl.ticket, slot);

    let mut w = STYLE_WEIGHTS[model];
    for x in &mut w[1..] {
        *x *= VERSION_FACTOR[version];
    }
    let style = STYLES[weighted(rng, &w)];
    let mut response = String::with_capacity(512);
    match style {
        Style::Good => {
            response.push_str(pick(rng, &OPENERS));
            fill(&mut response, tpl.good, slot);
            response.push_str(pick(rng, &CLOSERS));
        }
        Style::Verbose => {
            fill(&mut response, pick(rng, &VERBOSE_INTRO), slot);
            fill(&mut response, tpl.good, slot);
            fill(&mut response, pick(rng, &VERBOSE_OUTRO), slot);
        }
        Style::Vague => fill(&mut response, pick(rng, &VAGUE), slot),
        Style::Informal if rng.random_bool(0.5) => {
            fill(&mut response, pick(rng, &INFORMAL_GENERIC), slot)
        }
        Style::Informal => {
            // Right idea, wrong register: the first sentence of the good answer, dressed down.
            fill(&mut response, pick(rng, &INFORMAL_OPEN), slot);
            let first = tpl.good.split(". ").next().unwrap_or(tpl.good);
            let start = response.len();
            fill(&mut response, first.trim_end_matches('.'), slot);
            response[start..].make_ascii_lowercase();
            response.push_str(pick(rng, &INFORMAL_CLOSE));
        }
        Style::OffTopic if rng.random_bool(0.7) => {
            // A fine answer to a different ticket.
            let other = (template_index + rng.random_range(1..TEMPLATES.len())) % TEMPLATES.len();
            fill(&mut response, TEMPLATES[other].good, slot);
        }
        Style::OffTopic => response.push_str(pick(rng, &OFF_TOPIC)),
    }
    let value = obj([
        ("id", Value::String(format!("ticket-{number:06}"))),
        ("ticket", Value::String(ticket)),
        ("response", Value::String(response)),
        ("model", Value::String(MODELS[model].to_owned())),
        (
            "prompt_version",
            Value::String(PROMPT_VERSIONS[version].to_owned()),
        ),
    ]);
    (value, style)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_output_different_seed_different() {
        let a: Vec<Value> = support_judge(300, 7).collect();
        assert_eq!(a, support_judge(300, 7).collect::<Vec<_>>());
        assert_ne!(a, support_judge(300, 8).collect::<Vec<_>>());
        // A prefix of a longer run equals a shorter run.
        assert_eq!(a[..50], support_judge(50, 7).collect::<Vec<_>>()[..]);
    }

    #[test]
    fn every_field_is_a_non_empty_string_in_order() {
        for (i, ex) in support_judge(2000, 3).enumerate() {
            let o = ex.as_object().unwrap();
            let keys: Vec<&str> = o.keys().map(String::as_str).collect();
            assert_eq!(
                keys,
                ["id", "ticket", "response", "model", "prompt_version"]
            );
            for v in o.values() {
                assert!(!v.as_str().unwrap().trim().is_empty());
            }
            assert_eq!(o["id"], format!("ticket-{:06}", i + 1));
            let text = format!("{}{}", o["ticket"], o["response"]);
            assert!(
                !text.contains('{') || text.contains("{}"),
                "unfilled slot in {text}"
            );
        }
    }

    #[test]
    fn blocks_of_fifteen_are_balanced() {
        let mut seen = std::collections::HashSet::new();
        for ex in support_judge(15, 11) {
            seen.insert(format!("{}|{}", ex["model"], ex["prompt_version"]));
        }
        assert_eq!(seen.len(), 15);
    }

    fn style_share(model: usize, version: usize, style: Style) -> f64 {
        let mut rng = rng(5);
        let hits = (0..4000)
            .filter(|i| example(&mut rng, *i, model, version).1 == style)
            .count();
        hits as f64 / 4000.0
    }

    #[test]
    fn quality_mix_differs_by_model_and_prompt_version() {
        // claude-3-5-haiku under v1.0 is informal about 28% of the time, gpt-4o about 6%.
        let haiku = style_share(4, 0, Style::Informal);
        assert!((0.24..0.33).contains(&haiku), "{haiku}");
        assert!(style_share(0, 0, Style::Informal) < 0.09);
        // v2.0 is better than v1.0 for every model.
        for m in 0..MODELS.len() {
            let (v10, v20) = (
                style_share(m, 0, Style::Good),
                style_share(m, 2, Style::Good),
            );
            assert!(v20 > v10 + 0.1, "model {m}: {v10} vs {v20}");
        }
        let verbose = style_share(2, 0, Style::Verbose);
        assert!((0.22..0.32).contains(&verbose), "{verbose}");
    }

    #[test]
    fn off_topic_and_informal_responses_look_like_it() {
        let mut rng = rng(9);
        let mut informal = 0;
        for i in 0..3000 {
            let (ex, style) = example(&mut rng, i, 4, 0);
            let r = ex["response"].as_str().unwrap();
            if style == Style::Informal {
                informal += 1;
                assert!(
                    r.contains("lol")
                        || r.contains('😅')
                        || r.contains("🤷")
                        || r.contains("👍")
                        || r.contains("haha")
                        || r.contains("yo,"),
                    "{r}"
                );
            }
            if style == Style::Verbose {
                assert!(r.len() > 400);
            }
        }
        assert!(informal > 500);
    }
}
