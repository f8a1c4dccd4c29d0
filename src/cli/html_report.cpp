#include "cli/html_report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/embedded_text.hpp"
#include "core/fields.hpp"
#include "score/fast_p.hpp"

namespace kbench::cli {
namespace embedded {
// src/cli/html/*, compiled in (cmake/embed_text.cmake).
extern const EmbeddedText kReportAssets[];
}  // namespace embedded

namespace {

const char* asset(std::string_view name) {
    for (const EmbeddedText* t = embedded::kReportAssets; t->name; ++t)
        if (name == t->name) return t->text;
    return "";
}

const char* const kLevelColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                     "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

const std::map<std::string, const char*> kStatusColours = {
    {"correct", "#2ca02c"},       {"incorrect", "#d62728"},    {"rejected", "#9467bd"},
    {"compile_error", "#7f7f7f"}, {"load_error", "#bcbd22"},   {"runtime_error", "#ff7f0e"},
    {"timeout", "#8c564b"},       {"crash", "#e377c2"},        {"infra_error", "#17becf"},
    {"no candidate", "#c7c7c7"},  {"not evaluated", "#e0e0e0"}};

std::string esc(const std::string& text) {
    std::string out;
    for (char c : text) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

// JSON inside a script element: "</" must not close it.
std::string script_json(const json& j) {
    std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '/') {
            out += "<\\/";
            ++i;
        } else {
            out += text[i];
        }
    }
    return out;
}

std::string percent(const score::Interval& i) {
    if (!i.defined) return "n/a";
    return fmt::format("{:.1f}% <small>[{:.1f}, {:.1f}]</small>", 100 * i.value, 100 * i.lo,
                       100 * i.hi);
}

std::string times(const score::Interval& i) {
    if (!i.defined) return "n/a";
    return fmt::format("{:.3f}x <small>[{:.3f}, {:.3f}]</small>", i.value, i.lo, i.hi);
}

struct ProblemRow {
    int level = 0;
    int id = 0;
    std::string name;
    std::string status;  // the best verdict's, or "no candidate" / "not evaluated"
    std::string reason;
    std::size_t candidates = 0;
    std::optional<double> speedup, lo, hi;
    std::optional<double> speed_of_light;
    std::string kernels;       // shown
    std::string kernels_full;  // every kernel, full names (the cell's title)
    std::string candidate;
};

std::map<std::pair<int, int>, ProblemRow> rows_of(const ScoredRun& run) {
    std::map<std::pair<int, int>, ProblemRow> rows;
    for (const auto& p : run.results.problems) {
        ProblemRow& r = rows[{p.level, p.id}];
        r.level = p.level;
        r.id = p.id;
        r.name = p.name;
        r.status = "not evaluated";
    }
    for (const auto& u : run.results.unanswered) {
        ProblemRow& r = rows[{u.level, u.id}];
        r.level = u.level;
        r.id = u.id;
        r.name = u.name;
        r.status = "no candidate";
        r.reason = u.why;
    }
    std::map<std::pair<int, int>, const Verdict*> best;
    for (const auto& v : run.results.verdicts) {
        std::pair<int, int> at{v.problem.level.value_or(0), v.problem.id.value_or(0)};
        ProblemRow& r = rows[at];
        r.level = at.first;
        r.id = at.second;
        if (r.name.empty()) r.name = v.problem.name;
        ++r.candidates;
        const Verdict*& b = best[at];
        if (!b || score::better_verdict(v, *b)) b = &v;
    }
    for (const auto& [at, v] : best) {
        ProblemRow& r = rows[at];
        r.status = std::string(to_string(v->status));
        r.reason = v->reason;
        r.speedup = v->speedup;
        if (v->speedup_ci95) {
            r.lo = v->speedup_ci95->first;
            r.hi = v->speedup_ci95->second;
        }
        if (v->floor.is_object() && v->floor.contains("speed_of_light") &&
            v->floor["speed_of_light"].is_number())
            r.speed_of_light = v->floor["speed_of_light"].get<double>();
        std::vector<KernelShare> kernels = v->kernels;
        std::sort(kernels.begin(), kernels.end(),
                  [](const auto& a, const auto& b) { return a.share > b.share; });
        for (std::size_t i = 0; i < kernels.size(); ++i) {
            std::string entry = kernels[i].name + fmt::format(" ({}, {:.0f}%)", kernels[i].origin,
                                                              100 * kernels[i].share);
            r.kernels_full += (i ? "\n" : "") + entry;
            if (i >= 4) continue;
            // Library kernels' names are long templates: their head names them well enough.
            std::string shown = kernels[i].name;
            std::size_t cut = shown.find_first_of("<(");
            if (cut != std::string::npos && cut > 0) shown = shown.substr(0, cut) + "<...>";
            if (shown.size() > 48) shown = shown.substr(0, 45) + "...";
            r.kernels += (i ? "; " : "") + shown +
                         fmt::format(" ({}, {:.0f}%)", kernels[i].origin, 100 * kernels[i].share);
        }
        if (kernels.size() > 4) r.kernels += fmt::format("; {} more", kernels.size() - 4);
        r.candidate = fs::path(v->candidate.path).filename().string();
    }
    return rows;
}

json rows_json(const std::map<std::pair<int, int>, ProblemRow>& rows) {
    json out = json::array();
    for (const auto& [at, r] : rows) {
        auto number = [](const std::optional<double>& x) { return x ? json(*x) : json(nullptr); };
        out.push_back(
            {{"level", r.level},
             {"id", r.id},
             {"name", r.name},
             {"status", r.status},
             {"reason", r.reason.size() > 600 ? r.reason.substr(0, 600) + "..." : r.reason},
             {"candidates", r.candidates},
             {"speedup", number(r.speedup)},
             {"lo", number(r.lo)},
             {"hi", number(r.hi)},
             {"sol", number(r.speed_of_light)},
             {"kernels", r.kernels},
             {"kernels_full", r.kernels_full},
             {"candidate", r.candidate}});
    }
    return out;
}

// A plot's frame: axes, ticks and labels around a plotting area.
struct Frame {
    double width = 560, height = 300, left = 56, right = 16, top = 16, bottom = 44;
    double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
    double x(double v) const { return left + (v - x0) / (x1 - x0) * (width - left - right); }
    double y(double v) const {
        return height - bottom - (v - y0) / (y1 - y0) * (height - top - bottom);
    }
};

std::string axes(const Frame& f, const std::vector<std::pair<double, std::string>>& xticks,
                 const std::vector<std::pair<double, std::string>>& yticks,
                 const std::string& xlabel, const std::string& ylabel) {
    std::string s;
    s += fmt::format("<line x1='{:.1f}' y1='{:.1f}' x2='{:.1f}' y2='{:.1f}' class='axis'/>", f.left,
                     f.height - f.bottom, f.width - f.right, f.height - f.bottom);
    s += fmt::format("<line x1='{:.1f}' y1='{:.1f}' x2='{:.1f}' y2='{:.1f}' class='axis'/>", f.left,
                     f.top, f.left, f.height - f.bottom);
    for (const auto& [v, label] : xticks)
        s += fmt::format(
            "<line x1='{0:.1f}' y1='{1:.1f}' x2='{0:.1f}' y2='{2:.1f}' class='grid'/>"
            "<text x='{0:.1f}' y='{3:.1f}' text-anchor='middle'>{4}</text>",
            f.x(v), f.top, f.height - f.bottom, f.height - f.bottom + 16, esc(label));
    for (const auto& [v, label] : yticks)
        s += fmt::format(
            "<line x1='{1:.1f}' y1='{0:.1f}' x2='{2:.1f}' y2='{0:.1f}' class='grid'/>"
            "<text x='{3:.1f}' y='{4:.1f}' text-anchor='end'>{5}</text>",
            f.y(v), f.left, f.width - f.right, f.left - 6, f.y(v) + 4, esc(label));
    s += fmt::format("<text x='{:.1f}' y='{:.1f}' text-anchor='middle'>{}</text>",
                     (f.left + f.width - f.right) / 2, f.height - 6, esc(xlabel));
    s += fmt::format(
        "<text transform='translate(14,{:.1f}) rotate(-90)' text-anchor='middle'>{}</text>",
        (f.top + f.height - f.bottom) / 2, esc(ylabel));
    return s;
}

std::string svg_open(const Frame& f, const std::string& id, const std::string& title) {
    return fmt::format(
        "<svg id='{}' class='plot' viewBox='0 0 {:.0f} {:.0f}' role='img' "
        "xmlns='http://www.w3.org/2000/svg'><title>{}</title>",
        id, f.width, f.height, esc(title));
}

std::map<int, std::vector<const score::ProblemOutcome*>> by_level(const ScoredRun& run) {
    std::map<int, std::vector<const score::ProblemOutcome*>> out;
    for (const auto& p : run.outcomes)
        if (!(run.exclude_flagged && p.flagged)) out[p.level].push_back(&p);
    return out;
}

// fast_p against p, a line a level (points at every 0.05 up to the largest speedup).
std::string fast_p_plot(const ScoredRun& run, const std::string& id) {
    auto levels = by_level(run);
    double top = 2;
    for (const auto& p : run.outcomes)
        if (p.correct && p.best_speedup) top = std::max(top, *p.best_speedup * 1.05);
    top = std::min(std::ceil(top), 16.0);
    Frame f;
    f.x1 = top;
    std::vector<std::pair<double, std::string>> xt, yt;
    double step = top <= 4 ? 0.5 : top <= 8 ? 1 : 2;
    for (double v = 0; v <= top + 1e-9; v += step) xt.push_back({v, fmt::format("{:g}", v)});
    for (int v = 0; v <= 100; v += 25) yt.push_back({v / 100.0, std::to_string(v) + "%"});
    std::string s = svg_open(f, id, "fast_p against p, a line a level");
    s += axes(f, xt, yt, "p (speedup at least)", "fast_p (share of problems)");
    int colour = 0;
    double legend_y = f.top + 10;
    for (const auto& [level, problems] : levels) {
        std::string points;
        double last_y = -1;
        for (double p = 0; p <= top + 1e-9; p += 0.05) {
            std::size_t hits = 0;
            for (const auto* o : problems)
                if (p <= 0
                        ? o->correct
                        : o->correct && o->has_baseline && o->best_speedup && *o->best_speedup >= p)
                    ++hits;
            double share = problems.empty() ? 0 : double(hits) / double(problems.size());
            // A step: the share holds until p passes the next speedup.
            if (last_y >= 0 && share != last_y)
                points += fmt::format("{:.1f},{:.1f} ", f.x(p), f.y(last_y));
            points += fmt::format("{:.1f},{:.1f} ", f.x(p), f.y(share));
            last_y = share;
        }
        const char* c = kLevelColours[colour++ % 8];
        s += fmt::format(
            "<polyline points='{}' fill='none' stroke='{}' stroke-width='2'>"
            "<title>level {}</title></polyline>",
            points, c, level);
        s += fmt::format(
            "<rect x='{:.1f}' y='{:.1f}' width='12' height='3' fill='{}'/>"
            "<text x='{:.1f}' y='{:.1f}'>level {} ({} problems)</text>",
            f.width - f.right - 150, legend_y, c, f.width - f.right - 134, legend_y + 5, level,
            problems.size());
        legend_y += 16;
    }
    s += fmt::format("<line x1='{0:.1f}' y1='{1:.1f}' x2='{0:.1f}' y2='{2:.1f}' class='one'/>",
                     f.x(1), f.top, f.height - f.bottom);
    return s + "</svg>";
}

// The best correct speedup of each problem, in bins of a half power of two.
std::string speedup_plot(const ScoredRun& run, const std::string& id) {
    const int bins = 16;  // from 1/16x to 16x
    std::vector<int> count(bins, 0);
    int total = 0;
    for (const auto& p : run.outcomes) {
        if (!p.correct || !p.best_speedup || *p.best_speedup <= 0) continue;
        if (run.exclude_flagged && p.flagged) continue;
        double at = (std::log2(*p.best_speedup) + 4) * 2;
        int bin = std::clamp(int(std::floor(at)), 0, bins - 1);
        ++count[std::size_t(bin)];
        ++total;
    }
    int most = std::max(1, *std::max_element(count.begin(), count.end()));
    Frame f;
    f.x0 = -4;
    f.x1 = 4;
    f.y1 = most;
    std::vector<std::pair<double, std::string>> xt, yt;
    for (int e = -4; e <= 4; e += 1)
        xt.push_back(
            {double(e), e < 0 ? fmt::format("1/{}x", 1 << -e) : fmt::format("{}x", 1 << e)});
    int ystep = std::max(1, most / 4);
    for (int v = 0; v <= most; v += ystep) yt.push_back({double(v), std::to_string(v)});
    std::string s = svg_open(f, id, "best correct speedup of each problem");
    s += axes(f, xt, yt, fmt::format("speedup of the best correct candidate ({} problems)", total),
              "problems");
    for (int b = 0; b < bins; ++b) {
        if (!count[std::size_t(b)]) continue;
        double lo = b / 2.0 - 4, hi = lo + 0.5;
        s += fmt::format(
            "<rect x='{:.1f}' y='{:.1f}' width='{:.1f}' height='{:.1f}' class='bar'>"
            "<title>{:.3g}x to {:.3g}x: {} problem(s)</title></rect>",
            f.x(lo) + 1, f.y(count[std::size_t(b)]), f.x(hi) - f.x(lo) - 2,
            f.y(0) - f.y(count[std::size_t(b)]), std::exp2(lo), std::exp2(hi),
            count[std::size_t(b)]);
    }
    s += fmt::format("<line x1='{0:.1f}' y1='{1:.1f}' x2='{0:.1f}' y2='{2:.1f}' class='one'/>",
                     f.x(0), f.top, f.height - f.bottom);
    return s + "</svg>";
}

// Verdicts by status, a stacked bar a level.
std::string status_plot(const ScoredRun& run, const std::string& id) {
    std::map<int, std::map<std::string, int>> counts;
    for (const auto& v : run.results.verdicts)
        ++counts[v.problem.level.value_or(0)][std::string(to_string(v.status))];
    for (const auto& u : run.results.unanswered) ++counts[u.level]["no candidate"];
    int widest = 1;
    for (const auto& [level, c] : counts) {
        int n = 0;
        for (const auto& [status, k] : c) n += k;
        widest = std::max(widest, n);
    }
    Frame f;
    f.height = 60 + 34.0 * double(std::max<std::size_t>(1, counts.size()));
    f.left = 70;
    f.bottom = 76;
    f.height += 16;
    f.x1 = widest;
    std::string s = svg_open(f, id, "verdicts by status and level");
    double y = f.top;
    for (const auto& [level, c] : counts) {
        double x = f.left;
        s += fmt::format("<text x='{:.1f}' y='{:.1f}' text-anchor='end'>level {}</text>",
                         f.left - 6, y + 17, level);
        for (const auto& [status, k] : c) {
            double w = (f.width - f.left - f.right) * double(k) / double(widest);
            auto colour = kStatusColours.count(status) ? kStatusColours.at(status) : "#999";
            s += fmt::format(
                "<rect x='{:.1f}' y='{:.1f}' width='{:.1f}' height='24' fill='{}'>"
                "<title>level {}: {} {}</title></rect>",
                x, y, w, colour, level, k, esc(status));
            if (w > 22)
                s += fmt::format(
                    "<text x='{:.1f}' y='{:.1f}' text-anchor='middle' "
                    "class='inbar'>{}</text>",
                    x + w / 2, y + 16, k);
            x += w;
        }
        y += 34;
    }
    // The legend: the statuses present.
    std::set<std::string> present;
    for (const auto& [level, c] : counts)
        for (const auto& [status, k] : c) present.insert(status);
    double lx = f.left;
    for (const auto& status : present) {
        auto colour = kStatusColours.count(status) ? kStatusColours.at(status) : "#999";
        double wide = 24 + 7.0 * double(status.size());
        if (lx + wide > f.width - f.right) {  // the next line of the legend
            lx = f.left;
            y += 16;
        }
        s += fmt::format(
            "<rect x='{:.1f}' y='{:.1f}' width='10' height='10' fill='{}'/>"
            "<text x='{:.1f}' y='{:.1f}'>{}</text>",
            lx, y + 8, colour, lx + 14, y + 17, esc(status));
        lx += wide;
    }
    return s + "</svg>";
}

std::string score_table(const ScoredRun& run, const std::vector<double>& thresholds) {
    std::string s =
        "<table class='score'><thead><tr><th>level</th><th>problems</th>"
        "<th>candidates</th><th>correct</th>";
    for (double p : thresholds) s += fmt::format("<th>fast_{:g}</th>", p);
    s += "<th>geomean speedup</th></tr></thead><tbody>";
    for (const auto& l : run.levels) {
        s += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td>", esc(l.level),
                         l.problems, l.candidates, percent(l.correct_rate));
        for (double p : thresholds) s += "<td>" + percent(l.fast_p.at(p)) + "</td>";
        s += fmt::format("<td>{} <small>over {}</small></td></tr>", times(l.geomean),
                         l.geomean_problems);
    }
    s += "</tbody></table>";
    std::string notes;
    for (const auto& l : run.levels)
        if (!l.without_baseline.empty() && l.level != "all")
            notes += fmt::format(
                "<li>level {}: {} problem(s) without a baseline time (never "
                "fast): {}</li>",
                esc(l.level), l.without_baseline.size(),
                esc(fmt::format("{}", fmt::join(l.without_baseline, ", "))));
    if (!run.results.unanswered.empty())
        notes += fmt::format("<li>{} problem(s) without a usable candidate count as failures</li>",
                             run.results.unanswered.size());
    if (run.results.not_evaluated)
        notes +=
            fmt::format("<li>{} candidate(s) not evaluated yet</li>", run.results.not_evaluated);
    if (!run.kernelbench.empty()) {
        notes += "<li>KernelBench's view (sample 0, speedups strictly above p): ";
        for (const auto& v : run.kernelbench)
            notes += fmt::format("level {}: correct {}/{}, geomean {:.3f}x; ", v.level, v.correct,
                                 v.total, v.geomean_speedup);
        notes += "</li>";
    }
    if (!notes.empty()) s += "<ul class='notes'>" + notes + "</ul>";
    return s;
}

std::string describe_config(const ScoredRun& run) {
    const json& c = run.results.config;
    if (!c.is_object()) return "";
    std::string out;
    for (const char* field : {"mode", "precision", "device", "policy", "tf32"}) {
        if (!c.contains(field)) continue;
        const json& v = c[field];
        out += fmt::format("<span class='tag'>{}: {}</span> ", field,
                           esc(v.is_string() ? v.get<std::string>() : dump_text(v)));
    }
    return out;
}

std::string changed_table(const ScoredRun& a, const ScoredRun& b) {
    auto ra = rows_of(a), rb = rows_of(b);
    std::set<std::pair<int, int>> keys;
    for (const auto& [k, r] : ra) keys.insert(k);
    for (const auto& [k, r] : rb) keys.insert(k);
    std::string s;
    int changed = 0;
    auto speed = [](const ProblemRow* r) {
        return r && r->speedup ? fmt::format("{:.3f}x", *r->speedup) : std::string();
    };
    for (const auto& k : keys) {
        const ProblemRow* x = ra.count(k) ? &ra.at(k) : nullptr;
        const ProblemRow* y = rb.count(k) ? &rb.at(k) : nullptr;
        std::string sx = x ? x->status : "absent", sy = y ? y->status : "absent";
        bool differs = sx != sy;
        if (!differs && x && y && x->speedup && y->speedup) {
            // Changed beyond both intervals, or by more than a tenth where there are none.
            if (x->lo && y->lo)
                differs = *x->hi < *y->lo || *y->hi < *x->lo;
            else
                differs = std::abs(std::log(*x->speedup / *y->speedup)) > std::log(1.1);
        }
        if (!differs) continue;
        ++changed;
        const ProblemRow& any = x ? *x : *y;
        s += fmt::format(
            "<tr class='changed'><td class='num'>{}</td><td>{}</td><td>{}</td><td "
            "class='num'>{}</td><td>{}</td><td class='num'>{}</td></tr>",
            any.level, esc(any.name), esc(sx), speed(x), esc(sy), speed(y));
    }
    std::string head = fmt::format(
        "<p>{} problem(s) changed (status, or a speedup whose intervals do not overlap)</p>",
        changed);
    if (!changed) return head;
    return head +
           fmt::format(
               "<table id='changed'><thead><tr><th>level</th><th>problem</th><th>{0}"
               "</th><th>speedup</th><th>{1}</th><th>speedup</th></tr></thead><tbody>",
               esc(a.run_dir.filename().string()), esc(b.run_dir.filename().string())) +
           s + "</tbody></table>";
}

}  // namespace

std::string html_report(const ScoredRun& run, const std::vector<double>& thresholds,
                        const ScoredRun* other) {
    std::string name = run.run_dir.filename().string();
    std::string h = "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>";
    h += "<meta name='viewport' content='width=device-width, initial-scale=1'>";
    h += "<title>kbench report: " + esc(name) + "</title><style>" + asset("style") +
         "</style></head><body>";
    h += "<h1>kbench report: " + esc(name) + "</h1>";
    h += "<p>" + describe_config(run) + "</p>";
    h += fmt::format(
        "<p><small>{} verdicts, {} problems; speedups against {}; 95% intervals from {} bootstrap "
        "resamples of problems (seed {}){}. From the run's store alone: <code>kbench report "
        "--run {}</code>.</small></p>",
        run.results.verdicts.size(), run.results.problems.size(), esc(run.baseline_label),
        run.options.replicates, run.options.seed,
        run.exclude_flagged ? "; problems flagged by the audit left out" : "",
        esc(run.run_dir.string()));
    h += "<h2>Score</h2>" + score_table(run, thresholds);
    if (other) {
        std::string oname = other->run_dir.filename().string();
        h += "<h2>Against " + esc(oname) + "</h2>" + score_table(*other, thresholds);
        h += "<h2>Problems that changed</h2>" + changed_table(run, *other);
    }
    auto figure = [](const std::string& caption, const std::string& svg) {
        return "<figure><figcaption>" + esc(caption) + "</figcaption>" + svg + "</figure>";
    };
    std::string oname = other ? other->run_dir.filename().string() : "";
    h += "<h2>Plots</h2><div class='plots'>";
    h += figure(name + ": fast_p against p", fast_p_plot(run, "plot-fast-p"));
    if (other) h += figure(oname + ": fast_p against p", fast_p_plot(*other, "plot-fast-p-other"));
    h +=
        figure(name + ": best correct speedup of each problem", speedup_plot(run, "plot-speedups"));
    if (other)
        h += figure(oname + ": best correct speedup of each problem",
                    speedup_plot(*other, "plot-speedups-other"));
    h += figure(name + ": verdicts by status and level", status_plot(run, "plot-status"));
    if (other)
        h += figure(oname + ": verdicts by status and level",
                    status_plot(*other, "plot-status-other"));
    h += "</div>";
    h += "<h2>Problems</h2><div class='controls'><input id='filter' type='search' "
         "placeholder='filter: name, status, reason, kernel' size='40' aria-label='filter'>"
         "<select id='status-filter' aria-label='status'><option value=''>every status</option>"
         "</select><span id='shown'></span></div>";
    h += "<table id='problems'><thead><tr><th data-key='level'>level</th><th "
         "data-key='problem'>problem</th><th data-key='status'>verdict</th><th "
         "data-key='speedup'>speedup [95%]</th><th data-key='sol'>speed of light</th><th "
         "data-key='candidates'>candidates</th><th data-key='reason'>reason</th><th "
         "data-key='kernels'>kernels that ran</th><th data-key='candidate'>best "
         "candidate</th></tr></thead><tbody></tbody></table>";
    json colours = json::object();
    for (const auto& [status, colour] : kStatusColours) colours[status] = colour;
    h += "<script type='application/json' id='rows'>" + script_json(rows_json(rows_of(run))) +
         "</script>";
    h += "<script type='application/json' id='colours'>" + script_json(colours) + "</script>";
    h += std::string("<script>") + asset("script") + "</script></body></html>\n";
    return h;
}

}  // namespace kbench::cli
