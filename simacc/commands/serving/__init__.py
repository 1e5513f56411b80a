"""The engines, their laws and their logs: ``simacc engines`` (each engine's own code through
``simacc check``), ``laws`` (every engine's law at one acceptance length) and ``observe`` (a
run's acceptance output against its law), and what they share (:mod:`.arguments`,
:mod:`.law_pages`)."""
