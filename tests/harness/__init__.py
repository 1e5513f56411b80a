"""The harness: loading and calling an implementation, processes, judging and its statistics, messages and reports, the plugin in another project, the hostile zoo."""
