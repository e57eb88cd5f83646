"""Analysis of the settled games (docs/calibration.md): not part of the rating plugin proper.

* :mod:`rating_plugin.analysis.gamelog` — reading the log the store exports (the record
  format itself is the plugin's :mod:`rating_plugin.logformat`);
* :mod:`rating_plugin.analysis.calibration` — fitting the win-chance curve's divisor (numpy);
* :mod:`rating_plugin.analysis.replay` — recomputing every rating under other rules;
* :mod:`rating_plugin.analysis.synth` — synthetic logs with a known true skill;
* :mod:`rating_plugin.analysis.plot` — the calibration plot (matplotlib);
* :mod:`rating_plugin.analysis.commands` — the ``export``, ``synth``, ``calibrate`` and
  ``replay`` commands of ``python -m rating_plugin`` (progress bars with tqdm).

numpy, tqdm and matplotlib come with the ``analysis`` extra (``pip install -e
'.[analysis]'``). Importing this package imports none of its modules; the plugin (formulas,
store, calculator) never imports it.
"""
