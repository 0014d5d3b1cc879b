/* jitbench: y axes of asv's graphs whose ticks differ and show the changes that matter.
 *
 * asv 0.6.6 labels a linear y axis with (value / unit).toPrecision(3) and, for a unit that is
 * neither a time nor a size (instruction counts, compiles), spans exactly the data: counts of
 * 3,810,000 to 3,810,400 read "3.81e+6" on every tick, and a wiggle of 0.01% fills the graph
 * as a 2% step would. This flot plugin gives each tick the decimals its step needs: in the
 * unit asv names on the axis (a time or a size), or, for any other unit, with the k/M/G of
 * the largest tick; and such an axis spans at least 2% of its values (jitbench compare's
 * count tolerance, 1%, either way: a change within it stays in the middle half of the
 * graph), or from one below to one above where the values are whole numbers. Log axes keep
 * asv's powers of ten. Loaded after flot by the page python -m jitbench.dashboard rewrites.
 */
(function ($) {
    "use strict";

    var PREFIXES = [[1e9, "G"], [1e6, "M"], [1e3, "k"]];

    // The fewest decimals that write a multiple of `step` exactly (flot's steps are 1, 2,
    // 2.5 and 5 times a power of ten).
    function decimals(step) {
        for (var d = 0; d < 12; ++d) {
            var scaled = step * Math.pow(10, d);
            if (Math.abs(scaled - Math.round(scaled)) <= 1e-6 * Math.abs(scaled)) {
                return d;
            }
        }
        return 12;
    }

    // The scale of the unit asv wrote on the axis (its long name: "microseconds"), or null.
    function unitScale(label) {
        var units = ($.asv && $.asv.time_units || []).concat($.asv && $.asv.mem_units || []);
        for (var i = 0; i < units.length; ++i) {
            if (units[i][1] === label) {
                return units[i][2];
            }
        }
        return null;
    }

    function tickLabel(value, axis) {
        var scale = unitScale(axis.options.axisLabel);
        var suffix = "";
        if (scale === null) {
            scale = 1;
            var top = Math.max(Math.abs(axis.min), Math.abs(axis.max));
            for (var i = 0; i < PREFIXES.length; ++i) {
                if (top >= PREFIXES[i][0]) {
                    scale = PREFIXES[i][0];
                    suffix = PREFIXES[i][1];
                    break;
                }
            }
        }
        return (value / scale).toFixed(decimals(axis.tickSize / scale)) + suffix;
    }

    // A count's axis (asv set its range to the data's) widened to the least span that shows
    // what matters, the data in its middle (not below zero where the data are not).
    function widen(axis) {
        var low = axis.min, high = axis.max;
        if (low == null || high == null || unitScale(axis.axisLabel) !== null) {
            return;
        }
        var whole = Number.isInteger(low) && Number.isInteger(high);
        var span = Math.max(0.02 * Math.max(Math.abs(low), Math.abs(high)), whole ? 2 : 0);
        if (whole) {
            axis.minTickSize = 1;
        }
        if (high - low >= span || span === 0) {
            return;
        }
        var bottom = (low + high) / 2 - span / 2;
        axis.min = low >= 0 ? Math.max(bottom, 0) : bottom;
        axis.max = axis.min + span;
    }

    function init(plot) {
        plot.hooks.processOptions.push(function (plot, options) {
            $.each(options.yaxes, function (_, axis) {
                // asv's linear axes only: a log axis has a transform and powers of ten.
                if ($.isFunction(axis.tickFormatter) && !axis.transform) {
                    axis.tickFormatter = tickLabel;
                    widen(axis);
                }
            });
        });
    }

    $.plot.plugins.push({init: init, options: {}, name: "jitbench-axes", version: "1"});
})(jQuery);
