#include "server/metrics/json.hpp"

#include <fmt/format.h>

#include <cmath>

#include "server/base/logging.hpp"

namespace warden::server::metrics {

std::string java_double(double v) {
  if (!std::isfinite(v)) return "0.0";
  double rounded = std::round(v * 10000.0) / 10000.0;
  if (rounded == std::floor(rounded) && std::fabs(rounded) < 1e15) return fmt::format("{:.1f}", rounded);
  return fmt::format("{}", rounded);
}

Json& Json::set(std::string key, Json value) {
  if (!is_object()) v_ = Object{};
  std::get<Object>(v_).emplace_back(std::move(key), std::move(value));
  return *this;
}

Json& Json::push(Json value) {
  if (!std::holds_alternative<Array>(v_)) v_ = Array{};
  std::get<Array>(v_).push_back(std::move(value));
  return *this;
}

std::optional<double> Json::number() const {
  if (auto* i = std::get_if<int64_t>(&v_)) return static_cast<double>(*i);
  if (auto* d = std::get_if<double>(&v_)) return *d;
  return std::nullopt;
}

std::string Json::dump() const {
  std::string out;
  write(out, 0);
  return out;
}

std::string Json::text() const {
  if (auto* s = std::get_if<std::string>(&v_)) return *s;
  if (auto* d = std::get_if<double>(&v_)) return java_double(*d);
  return dump();
}

void Json::write(std::string& out, int indent) const {
  auto pad = [&](int n) { out.append(static_cast<size_t>(n) * 2, ' '); };
  if (std::holds_alternative<std::nullptr_t>(v_)) {
    out += "null";
  } else if (auto* b = std::get_if<bool>(&v_)) {
    out += *b ? "true" : "false";
  } else if (auto* i = std::get_if<int64_t>(&v_)) {
    out += std::to_string(*i);
  } else if (auto* d = std::get_if<double>(&v_)) {
    out += java_double(*d);
  } else if (auto* s = std::get_if<std::string>(&v_)) {
    out += '"';
    append_json_escaped(out, *s);
    out += '"';
  } else if (auto* a = std::get_if<Array>(&v_)) {
    if (a->empty()) {
      out += "[ ]";
      return;
    }
    out += "[ ";
    for (size_t k = 0; k < a->size(); ++k) {
      if (k) out += ", ";
      (*a)[k].write(out, indent);
    }
    out += " ]";
  } else if (auto* o = std::get_if<Object>(&v_)) {
    if (o->empty()) {
      out += "{ }";
      return;
    }
    out += "{\n";
    for (size_t k = 0; k < o->size(); ++k) {
      pad(indent + 1);
      out += '"';
      append_json_escaped(out, (*o)[k].first);
      out += "\" : ";
      (*o)[k].second.write(out, indent + 1);
      out += k + 1 < o->size() ? ",\n" : "\n";
    }
    pad(indent);
    out += '}';
  }
}

}  // namespace warden::server::metrics
