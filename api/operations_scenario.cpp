#include "api/operations_scenario.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "sim/unit_parse.hpp"

namespace fabricsim::api {
namespace {

models::FailureRate read_rate(const sim::JsonValue& v) {
  try {
    return models::parse_failure_rate(v.as_string());
  } catch (const sim::UnitError& e) {
    v.fail_message(e.what());
  }
}

void read_failure(const sim::JsonValue& v, models::FailureClass& c) {
  sim::ObjectReader r = v.as_object();
  if (auto rate = r.optional("rate")) {
    c.rate = read_rate(*rate);
    c.source = "scenario";
  }
  if (auto b = r.optional("blast")) {
    c.blast = b->as_enum({"job", "degrade"}) == "job" ? models::BlastRadius::job
                                                      : models::BlastRadius::degrade;
  }
  if (auto s = r.optional("slowdown")) c.slowdown = s->as_fraction();
  if (auto n = r.optional("needs_repair")) c.needs_repair = n->as_bool();
  r.finish();
}

void read_reliability(const sim::JsonValue& v, OperationsSpec& ops) {
  sim::ObjectReader r = v.as_object();
  if (auto level = r.optional("recovery")) {
    ops.recovery = level->as_enum({"manual", "automated"}) == "manual"
                       ? models::RecoveryLevel::manual
                       : models::RecoveryLevel::automated;
  }
  if (auto t = r.optional("detection")) ops.detection_s = t->as_time_or_zero().s();
  if (auto t = r.optional("isolation")) ops.isolation_s = t->as_time_or_zero().s();
  if (auto t = r.optional("restart")) ops.restart_s = t->as_time_or_zero().s();
  if (auto t = r.optional("repair")) ops.repair_s = t->as_time().s();
  if (auto n = r.optional("spare_nodes")) ops.spare_nodes = n->as_non_negative_int32();
  if (auto f = r.optional("spare_fraction")) ops.spare_fraction = f->as_fraction();
  if (auto p = r.optional("planned")) {
    const models::FailureRate rate = read_rate(*p);
    if (rate.scope != models::FailureScope::job) p->fail("a rate per job, such as '0.9/job-day'");
    ops.planned_per_hour = rate.per_hour;
  }
  if (auto f = r.optional("failures")) {
    sim::ObjectReader fr = f->as_object();
    for (models::FailureClass& c : ops.failures) {
      if (auto cv = fr.optional(c.name)) read_failure(*cv, c);
    }
    fr.finish();
  }
  r.finish();
}

void read_checkpoint(const sim::JsonValue& v, models::CheckpointSpec& ck) {
  sim::ObjectReader r = v.as_object();
  if (auto m = r.optional("mode")) {
    ck.mode = m->as_enum({"sync", "async"}) == "sync" ? models::CheckpointMode::sync
                                                      : models::CheckpointMode::async;
  }
  if (auto i = r.optional("interval")) {
    const std::string s = i->as_string();
    if (s == "daly") {
      ck.rule = models::IntervalRule::daly;
    } else if (s == "young") {
      ck.rule = models::IntervalRule::young;
    } else {
      try {
        ck.interval_s = sim::parse_time(s).s();
      } catch (const sim::UnitError&) {
        i->fail("\"daly\", \"young\" or a time such as \"30 min\"");
      }
      if (ck.interval_s <= 0) i->fail("a positive time");
      ck.rule = models::IntervalRule::fixed;
    }
  }
  if (auto p = r.optional("parallel_save")) ck.parallel_save = p->as_bool();
  if (auto b = r.optional("snapshot_bandwidth"))
    ck.snapshot_bytes_per_s = b->as_bandwidth().bytes_per_s();
  if (auto s = r.optional("size")) ck.state_bytes = s->as_bytes().count();
  r.finish();
}

void read_storage(const sim::JsonValue& v, OperationsSpec& ops) {
  sim::ObjectReader r = v.as_object();
  models::StorageSpec& s = ops.storage;
  if (auto b = r.optional("write_bandwidth")) s.write_bytes_per_s = b->as_bandwidth().bytes_per_s();
  if (auto b = r.optional("read_bandwidth")) s.read_bytes_per_s = b->as_bandwidth().bytes_per_s();
  if (auto b = r.optional("per_node_bandwidth"))
    s.per_node_bytes_per_s = b->as_bandwidth().bytes_per_s();
  if (auto b = r.optional("shares_fabric")) s.shares_fabric = b->as_bool();
  if (auto b = r.optional("bytes_per_token")) ops.bytes_per_token = b->as_positive_number();
  if (auto a = r.optional("read_amplification")) {
    ops.read_amplification = a->as_positive_number();
    if (ops.read_amplification < 1) a->fail("a factor of at least 1");
  }
  r.finish();
}

double read_factor(const sim::JsonValue& v) {
  const double f = v.as_positive_number();
  if (f < 1) v.fail("a slowdown factor of at least 1 (1.2: 20% slower)");
  return f;
}

/// {"17": 1.5, ...}: ids below `count` and their factors.
std::map<int, double> read_named(const sim::JsonValue& v, int count, const char* what) {
  std::map<int, double> out;
  sim::ObjectReader r = v.as_object();
  for (const std::string& key : r.keys()) {
    const sim::JsonValue f = r.required(key);
    int id = -1;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (ec != std::errc() || end != key.data() + key.size() || id < 0 || id >= count) {
      v.fail_message(fmt::format("'{}' is not a {} index in 0..{}", key, what, count - 1));
    }
    out[id] = read_factor(f);
  }
  r.finish();
  return out;
}

/// {"17": 4} (slow for the whole step) or {"17": {"factor": 4, "from": "0.2 s", "until": "0.5 s"}}
/// (slow for part of it).
void read_links(const sim::JsonValue& v, models::StragglerSpec& s, int gpus) {
  nlohmann::json whole = nlohmann::json::object();
  sim::ObjectReader r = v.as_object();
  for (const std::string& key : r.keys()) {
    const sim::JsonValue entry = r.required(key);
    if (!entry.raw().is_object()) {
      whole[key] = entry.raw();
      continue;
    }
    const std::map<int, double> id = read_named(v.child({{key, 1}}, v.pointer()), gpus, "GPU");
    sim::ObjectReader er = entry.as_object();
    models::StragglerSpec::LinkWindow w;
    w.rank = id.begin()->first;
    w.factor = read_factor(er.required("factor"));
    if (auto f = er.optional("from")) w.from = f->as_time_or_zero();
    if (auto u = er.optional("until")) {
      w.until = u->as_time();
      if (w.until <= w.from) u->fail(fmt::format("a time after 'from' ({} s)", w.from.s()));
    }
    er.finish();
    // Slow for the whole step: the static factor, as the number form gives it.
    if (w.from == sim::Time::zero() && w.until == sim::Time::max()) {
      whole[key] = w.factor;
      continue;
    }
    s.link_windows.push_back(w);
  }
  r.finish();
  s.links = read_named(v.child(whole, v.pointer()), gpus, "GPU");
}

void read_stragglers(const sim::JsonValue& v, models::StragglerSpec& s, int gpus,
                     int gpus_per_node) {
  sim::ObjectReader r = v.as_object();
  if (auto f = r.optional("fraction")) s.fraction = f->as_fraction();
  if (auto d = r.optional("slowdown")) {
    if (d->raw().is_object()) {
      sim::ObjectReader dr = d->as_object();
      s.slowdown_min = read_factor(dr.required("min"));
      s.slowdown_max = read_factor(dr.required("max"));
      dr.finish();
      if (s.slowdown_max < s.slowdown_min) d->fail_message("max must be at least min");
    } else {
      s.slowdown_min = s.slowdown_max = read_factor(*d);
    }
  }
  if (auto seed = r.optional("seed")) s.seed = static_cast<uint64_t>(seed->as_non_negative_int());
  if (auto f = r.optional("node_fraction")) s.node_fraction = f->as_fraction();
  if (auto f = r.optional("node_slowdown")) s.node_slowdown = read_factor(*f);
  if (auto n = r.optional("ranks")) s.ranks = read_named(*n, gpus, "GPU");
  if (auto n = r.optional("nodes")) {
    s.nodes = read_named(*n, (gpus + gpus_per_node - 1) / gpus_per_node, "node");
  }
  if (auto n = r.optional("links")) read_links(*n, s, gpus);
  r.finish();
}

}  // namespace

void read_operations(sim::ObjectReader& top, OperationsSpec& out, int gpus, int gpus_per_node) {
  if (auto v = top.optional("reliability")) read_reliability(*v, out);
  if (auto v = top.optional("checkpoint")) read_checkpoint(*v, out.checkpoint);
  if (auto v = top.optional("storage")) read_storage(*v, out);
  if (auto v = top.optional("stragglers")) {
    read_stragglers(*v, out.stragglers, gpus, gpus_per_node);
    const std::vector<double> f = models::rank_slowdowns(out.stragglers, gpus, gpus_per_node);
    if (std::any_of(f.begin(), f.end(), [](double x) { return x != 1.0; }))
      out.compute_slowdown = f;
  }
}

models::RecoverySpec resolve_recovery(const OperationsSpec& ops, models::RecoveryLevel level,
                                      int nodes) {
  models::RecoverySpec r = models::recovery_preset(level);
  if (ops.detection_s) r.detection_s = *ops.detection_s;
  if (ops.isolation_s) r.isolation_s = *ops.isolation_s;
  if (ops.restart_s) r.restart_s = *ops.restart_s;
  if (ops.repair_s) r.repair_s = *ops.repair_s;
  if (ops.planned_per_hour) r.planned_per_hour = *ops.planned_per_hour;
  r.spare_nodes =
      ops.spare_nodes ? *ops.spare_nodes : static_cast<int>(std::ceil(ops.spare_fraction * nodes));
  return r;
}

}  // namespace fabricsim::api
