# An episode keeps what it was derived from (Memory.sources: the facts told with it and the
# items its run recalled), so deleting a fact deletes the episodes that could repeat it.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('chat', '0012_run_agent_mode'),
    ]

    operations = [
        migrations.AddField(
            model_name='memory',
            name='sources',
            field=models.ManyToManyField(blank=True, related_name='derived', to='chat.memory'),
        ),
    ]
