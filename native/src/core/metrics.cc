// Custom metrics created by backends (TRITONSERVER_Metric*, spec §6.4): counters, gauges and
// histograms kept in the host and rendered as Prometheus text for Warden's /metrics.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

#include "objects.h"

struct TRITONSERVER_MetricArgs {
  bool histogram = false;
  std::vector<double> buckets;
};

struct TRITONSERVER_MetricFamily {
  TRITONSERVER_MetricKind kind;
  std::string name;
  std::string description;
  std::vector<TRITONSERVER_Metric*> metrics;
};

namespace {
/** One time series: a family name and a label set. Every TRITONSERVER_Metric created with the same
 *  family name and the same labels (in any order) shares one series, as prometheus-cpp's
 *  Family::Add does in Triton, so N instances registering the same metric give one series. */
struct Series {
  std::vector<std::pair<std::string, std::string>> labels;  // as the first creator gave them
  std::string key;                                          // sorted labels, for matching
  double value = 0;
  std::vector<double> buckets;          // histogram upper bounds (ascending)
  std::vector<uint64_t> bucket_counts;  // non-cumulative
  double sum = 0;
  uint64_t count = 0;
};
}  // namespace

struct TRITONSERVER_Metric {
  TRITONSERVER_MetricFamily* family;
  std::shared_ptr<Series> series;
};

namespace {

// Never destroyed (see request.cc): backends may touch metrics while the process exits.
std::mutex& metrics_mu = *new std::mutex;
std::vector<TRITONSERVER_MetricFamily*>& families = *new std::vector<TRITONSERVER_MetricFamily*>;
/** Live series by family name (families of one name share their series). */
std::map<std::string, std::vector<std::shared_ptr<Series>>>& series_by_family =
    *new std::map<std::string, std::vector<std::shared_ptr<Series>>>;

std::string SeriesKey(std::vector<std::pair<std::string, std::string>> labels) {
  std::sort(labels.begin(), labels.end());
  std::string k;
  for (const auto& kv : labels) k += kv.first + '\x01' + kv.second + '\x02';
  return k;
}

const char* KindName(TRITONSERVER_MetricKind kind) {
  switch (kind) {
    case TRITONSERVER_METRIC_KIND_COUNTER:
      return "counter";
    case TRITONSERVER_METRIC_KIND_GAUGE:
      return "gauge";
    default:
      return "histogram";
  }
}

std::string EscapeLabel(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

std::string LabelSet(const std::vector<std::pair<std::string, std::string>>& labels, const std::string& extra_key = "",
                     const std::string& extra_value = "") {
  if (labels.empty() && extra_key.empty()) return "";
  std::string s = "{";
  bool first = true;
  for (const auto& kv : labels) {
    if (!first) s += ',';
    first = false;
    s += kv.first + "=\"" + EscapeLabel(kv.second) + "\"";
  }
  if (!extra_key.empty()) {
    if (!first) s += ',';
    s += extra_key + "=\"" + extra_value + "\"";
  }
  return s + "}";
}

bool ValidName(const char* name) {
  if (name == nullptr || *name == 0) return false;
  for (const char* p = name; *p; ++p) {
    char c = *p;
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (p != name && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

TRITONSERVER_Error* NewMetric(TRITONSERVER_Metric** metric, TRITONSERVER_MetricFamily* family,
                              const TRITONSERVER_Parameter** labels, uint64_t label_count,
                              const TRITONSERVER_MetricArgs* args) {
  WARDEN_REQUIRE(metric && family && (labels || label_count == 0), "TRITONSERVER_MetricNew");
  auto s = std::make_shared<Series>();
  for (uint64_t i = 0; i < label_count; ++i) {
    const TRITONSERVER_Parameter* p = labels[i];
    if (p == nullptr || p->type != TRITONSERVER_PARAMETER_STRING || !ValidName(p->name.c_str())) {
      return warden::InvalidArg("metric labels must be STRING parameters with valid label names");
    }
    for (const auto& kv : s->labels) {
      if (kv.first == p->name) return warden::InvalidArg("duplicate metric label '" + p->name + "'");
    }
    s->labels.emplace_back(p->name, p->string_value);
  }
  s->key = SeriesKey(s->labels);
  if (family->kind == TRITONSERVER_METRIC_KIND_HISTOGRAM) {
    if (args == nullptr || !args->histogram) {
      return warden::InvalidArg("histogram metric '" + family->name +
                                "' needs TRITONSERVER_MetricArgsSetHistogram buckets");
    }
    s->buckets = args->buckets;
    s->bucket_counts.assign(s->buckets.size(), 0);
  }
  std::lock_guard<std::mutex> lk(metrics_mu);
  auto& live = series_by_family[family->name];
  for (const auto& existing : live) {
    if (existing->key != s->key) continue;
    if (existing->buckets != s->buckets) {
      return warden::InvalidArg("histogram metric '" + family->name +
                                "' already has a series with these labels and other buckets");
    }
    s = existing;  // same family name, same labels: one series (Triton's behaviour)
    break;
  }
  if (s.use_count() == 1) live.push_back(s);
  auto m = std::make_unique<TRITONSERVER_Metric>();
  m->family = family;
  m->series = std::move(s);
  family->metrics.push_back(m.get());
  *metric = m.release();
  return nullptr;
}

}  // namespace

extern "C" {

TRITONSERVER_Error* TRITONSERVER_MetricFamilyNew(TRITONSERVER_MetricFamily** family, const TRITONSERVER_MetricKind kind,
                                                 const char* name, const char* description) {
  WARDEN_REQUIRE(family && name, "TRITONSERVER_MetricFamilyNew");
  if (!ValidName(name)) return warden::InvalidArg(std::string("invalid metric family name '") + name + "'");
  if (kind != TRITONSERVER_METRIC_KIND_COUNTER && kind != TRITONSERVER_METRIC_KIND_GAUGE &&
      kind != TRITONSERVER_METRIC_KIND_HISTOGRAM) {
    return warden::InvalidArg("unknown metric kind " + std::to_string(int(kind)));
  }
  std::lock_guard<std::mutex> lk(metrics_mu);
  for (auto* f : families) {
    if (f->name == name && f->kind != kind) {
      return warden::InvalidArg(std::string("metric family '") + name + "' already exists with a different kind");
    }
  }
  auto* f = new TRITONSERVER_MetricFamily{kind, name, description == nullptr ? "" : description, {}};
  families.push_back(f);
  *family = f;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_MetricFamilyDelete(TRITONSERVER_MetricFamily* family) {
  WARDEN_REQUIRE(family, "TRITONSERVER_MetricFamilyDelete");
  std::lock_guard<std::mutex> lk(metrics_mu);
  if (!family->metrics.empty()) {
    return warden::InvalidArg("metric family '" + family->name + "' still has metrics; delete them first");
  }
  families.erase(std::remove(families.begin(), families.end(), family), families.end());
  delete family;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_GetMetricFamilyKind(TRITONSERVER_MetricFamily* family, TRITONSERVER_MetricKind* kind) {
  WARDEN_REQUIRE(family && kind, "TRITONSERVER_GetMetricFamilyKind");
  *kind = family->kind;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_MetricArgsNew(TRITONSERVER_MetricArgs** args) {
  WARDEN_REQUIRE(args, "TRITONSERVER_MetricArgsNew");
  *args = new TRITONSERVER_MetricArgs;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_MetricArgsSetHistogram(TRITONSERVER_MetricArgs* args, const double* buckets,
                                                        const uint64_t buckets_count) {
  WARDEN_REQUIRE(args && (buckets || buckets_count == 0), "TRITONSERVER_MetricArgsSetHistogram");
  std::vector<double> b(buckets, buckets + buckets_count);
  for (size_t i = 1; i < b.size(); ++i) {
    if (!(b[i] > b[i - 1])) return warden::InvalidArg("histogram buckets must be increasing");
  }
  args->histogram = true;
  args->buckets = std::move(b);
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_MetricArgsDelete(TRITONSERVER_MetricArgs* args) {
  delete args;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_MetricNew(TRITONSERVER_Metric** metric, TRITONSERVER_MetricFamily* family,
                                           const TRITONSERVER_Parameter** labels, const uint64_t label_count) {
  return NewMetric(metric, family, labels, label_count, nullptr);
}

TRITONSERVER_Error* TRITONSERVER_MetricNewWithArgs(TRITONSERVER_Metric** metric, TRITONSERVER_MetricFamily* family,
                                                   const TRITONSERVER_Parameter** labels, const uint64_t label_count,
                                                   const TRITONSERVER_MetricArgs* args) {
  return NewMetric(metric, family, labels, label_count, args);
}

TRITONSERVER_Error* TRITONSERVER_MetricDelete(TRITONSERVER_Metric* metric) {
  WARDEN_REQUIRE(metric, "TRITONSERVER_MetricDelete");
  std::lock_guard<std::mutex> lk(metrics_mu);
  auto& ms = metric->family->metrics;
  ms.erase(std::remove(ms.begin(), ms.end(), metric), ms.end());
  // The series goes when its last metric does (the family's list holds one reference).
  auto it = series_by_family.find(metric->family->name);
  if (it != series_by_family.end() && metric->series.use_count() == 2) {
    auto& live = it->second;
    live.erase(std::remove(live.begin(), live.end(), metric->series), live.end());
    if (live.empty()) series_by_family.erase(it);
  }
  delete metric;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_MetricValue(TRITONSERVER_Metric* metric, double* value) {
  WARDEN_REQUIRE(metric && value, "TRITONSERVER_MetricValue");
  std::lock_guard<std::mutex> lk(metrics_mu);
  if (metric->family->kind == TRITONSERVER_METRIC_KIND_HISTOGRAM) {
    return warden::Unsupported("TRITONSERVER_MetricValue is not supported for histograms");
  }
  *value = metric->series->value;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_MetricIncrement(TRITONSERVER_Metric* metric, double value) {
  WARDEN_REQUIRE(metric, "TRITONSERVER_MetricIncrement");
  std::lock_guard<std::mutex> lk(metrics_mu);
  switch (metric->family->kind) {
    case TRITONSERVER_METRIC_KIND_COUNTER:
      if (value < 0) return warden::InvalidArg("counters can only be incremented by values >= 0");
      metric->series->value += value;
      return nullptr;
    case TRITONSERVER_METRIC_KIND_GAUGE:
      metric->series->value += value;
      return nullptr;
    default:
      return warden::Unsupported("TRITONSERVER_MetricIncrement is not supported for histograms");
  }
}

TRITONSERVER_Error* TRITONSERVER_MetricSet(TRITONSERVER_Metric* metric, double value) {
  WARDEN_REQUIRE(metric, "TRITONSERVER_MetricSet");
  std::lock_guard<std::mutex> lk(metrics_mu);
  if (metric->family->kind != TRITONSERVER_METRIC_KIND_GAUGE) {
    return warden::Unsupported("TRITONSERVER_MetricSet is only supported for gauges");
  }
  metric->series->value = value;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_MetricObserve(TRITONSERVER_Metric* metric, double value) {
  WARDEN_REQUIRE(metric, "TRITONSERVER_MetricObserve");
  std::lock_guard<std::mutex> lk(metrics_mu);
  if (metric->family->kind != TRITONSERVER_METRIC_KIND_HISTOGRAM) {
    return warden::Unsupported("TRITONSERVER_MetricObserve is only supported for histograms");
  }
  Series& ser = *metric->series;
  auto it = std::lower_bound(ser.buckets.begin(), ser.buckets.end(), value);
  if (it != ser.buckets.end()) ser.bucket_counts[size_t(it - ser.buckets.begin())]++;
  ser.sum += value;
  ser.count++;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_GetMetricKind(TRITONSERVER_Metric* metric, TRITONSERVER_MetricKind* kind) {
  WARDEN_REQUIRE(metric && kind, "TRITONSERVER_GetMetricKind");
  *kind = metric->family->kind;
  return nullptr;
}

char* WARDEN_CustomMetricsText(void) {
  std::ostringstream os;
  std::lock_guard<std::mutex> lk(metrics_mu);
  std::vector<std::string> done;
  for (size_t i = 0; i < families.size(); ++i) {
    const TRITONSERVER_MetricFamily* head = families[i];
    if (std::find(done.begin(), done.end(), head->name) != done.end()) continue;
    done.push_back(head->name);
    os << "# HELP " << head->name << ' ' << head->description << '\n';
    os << "# TYPE " << head->name << ' ' << KindName(head->kind) << '\n';
    auto found = series_by_family.find(head->name);  // families sharing a name print together
    if (found == series_by_family.end()) continue;
    {
      for (const auto& m : found->second) {
        if (head->kind != TRITONSERVER_METRIC_KIND_HISTOGRAM) {
          os << head->name << LabelSet(m->labels) << ' ' << Number(m->value) << '\n';
          continue;
        }
        uint64_t cumulative = 0;
        for (size_t b = 0; b < m->buckets.size(); ++b) {
          cumulative += m->bucket_counts[b];
          os << head->name << "_bucket" << LabelSet(m->labels, "le", Number(m->buckets[b])) << ' ' << cumulative
             << '\n';
        }
        os << head->name << "_bucket" << LabelSet(m->labels, "le", "+Inf") << ' ' << m->count << '\n';
        os << head->name << "_sum" << LabelSet(m->labels) << ' ' << Number(m->sum) << '\n';
        os << head->name << "_count" << LabelSet(m->labels) << ' ' << m->count << '\n';
      }
    }
  }
  std::string s = os.str();
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out != nullptr) std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

}  // extern "C"
